package sim

// faultLoop injects one fault every FaultEveryUS (±50%) during the safety
// phase, drawing kinds from the enabled fault mix.
func (s *Sim) faultLoop() {
	d := s.p.FaultEveryUS/2 + s.rng.Int63n(s.p.FaultEveryUS)
	s.clk.after(d, func() {
		if s.clk.now >= s.p.SafetyUS || s.failed() {
			return
		}
		s.injectFault()
		s.faultLoop()
	})
}

func (s *Sim) injectFault() {
	if len(s.p.Faults) == 0 {
		return
	}
	kind := s.p.Faults[s.rng.Intn(len(s.p.Faults))]
	sv := s.servers[s.rng.Intn(len(s.servers))]
	switch kind {
	case "crash":
		if !sv.up {
			s.restart(sv)
			return
		}
		if s.countDown() < s.p.MaxDown {
			s.note("crash %d", sv.id)
			s.crash(sv)
			// Come back later, with whatever reached the disk.
			s.clk.after(s.p.FaultEveryUS*int64(1+s.rng.Intn(4)), func() {
				if !sv.up && s.clk.now < s.p.SafetyUS {
					s.restart(sv)
				}
			})
		}
	case "pause":
		if sv.up && !sv.paused && s.countDown() < s.p.MaxDown {
			s.note("pause %d", sv.id)
			sv.paused = true
			s.clk.after(s.p.FaultEveryUS*int64(1+s.rng.Intn(3)), func() { s.unpause(sv) })
		}
	case "partition":
		if s.net.nBlocked > 0 {
			s.note("heal")
			s.net.heal()
			return
		}
		s.partition()
	case "loss":
		s.net.drop = float64(s.rng.Intn(300)) / 1000
		s.note("drop=%.3f", s.net.drop)
	case "delay":
		s.net.slowUntil = s.clk.now + s.p.FaultEveryUS
		s.note("slow network")
	}
}

// restart brings sv back up from its disk. In the safety phase, with disk
// faults enabled, the disk may have failed meanwhile (injectDiskFault); a
// restart that finds durable state lost, as production storage would
// (disk.lossReason), marks the disk lost and leaves the rest to
// restartAfterLoss.
func (s *Sim) restart(sv *server) {
	if sv.up {
		return
	}
	s.note("restart %d", sv.id)
	if s.p.DiskFaultProb > 0 && s.clk.now < s.p.SafetyUS && s.drng.Float64() < s.p.DiskFaultProb {
		if kind := s.injectDiskFault(sv); kind != "" {
			s.note("disk fault %d: %s", sv.id, kind)
		}
	}
	reason := sv.disk.lossReason()
	sv.disk.repair()
	if reason != "" {
		sv.disk.lost, sv.disk.recoverTo = true, len(s.chk.canon)-1
		s.note("server %d lost durable state: %s", sv.id, reason)
		s.restartAfterLoss(sv, reason)
		return
	}
	s.startUp(sv)
}

// startUp starts sv's node from its disk and lets it work.
func (s *Sim) startUp(sv *server) {
	if err := s.start(sv); err != nil {
		s.fail(failCrash, "restart %d: %v", sv.id, err)
		return
	}
	s.kick(sv)
}

func (s *Sim) unpause(sv *server) {
	if sv.up && sv.paused {
		sv.paused = false
		s.kick(sv)
	}
}

// countDown counts the initial servers that are down, paused or in a
// stalled fsync.
func (s *Sim) countDown() int {
	n := 0
	for _, sv := range s.servers {
		if !sv.up || sv.paused || sv.stallUntil > s.clk.now {
			n++
		}
	}
	return n
}

// partition applies one partition of a kind from the enabled mix.
func (s *Sim) partition() {
	n := len(s.servers)
	in := make([]bool, s.net.n) // spares, if any, stay on the majority's side
	kind := s.p.Partitions[s.rng.Intn(len(s.p.Partitions))]
	oneWay := false
	switch kind {
	case "isolate":
		in[s.rng.Intn(n)] = true
	case "groups":
		// One group (or, in classic mode, a random half) apart from the rest.
		g := s.rng.Intn(len(s.voters.Groups))
		for _, id := range s.voters.Groups[g] {
			in[int(id)-1] = true
		}
		if len(s.voters.Groups) == 1 {
			for i := range n {
				in[i] = s.rng.Intn(2) == 0
			}
		}
	case "asymmetric":
		oneWay = true
		fallthrough
	default: // symmetric: a random subset against the rest
		for i := range n {
			in[i] = s.rng.Intn(2) == 0
		}
	}
	s.note("partition %s", kind)
	s.net.split(in, oneWay)
}
