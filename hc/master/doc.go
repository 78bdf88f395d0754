// Package master runs the master side of the hierarchical lock service
// (docs/hierarchical-locks.md): it sets up the master ensemble's layout
// and registers worker ensembles (Init, Register), plans moves of locks
// between workers (Rebalance, MoveLocks), executes them step by step
// (the move protocol), and hosts the daemon that does both on its own
// (Run): several daemons campaign in the master ensemble, the elected one
// recruits a standby worker when an active one holds more locks than the
// threshold and executes every move recorded in the master. Status
// summarizes the service and Audit compares the master's maps with the
// workers' copies.
//
// Every piece of state lives in the master ensemble, every step of a move
// is recorded there before the next begins, and every write, on the
// master or on a worker, is conditioned on a version read before it: a
// daemon killed between any two steps is resumed by the next one from the
// record, and two daemons acting at once (an old leader that has not yet
// noticed its session ended) cannot make a lock acquirable on two workers.
package master
