package client

import (
	"context"
	"strings"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// ConfigNode is the znode where a ZooKeeper 3.5+ ensemble, and Giraffe,
// publish the ensemble's membership in the dynamic configuration format
// (server.N=host:port:port[:role];[clientHost:]clientPort lines and a
// version=<hex> line). ZooKeeper's getConfig is a getData of it.
const ConfigNode = "/zookeeper/config"

// AnyConfig, as a reconfig's fromConfig, skips the check of the
// configuration's version.
const AnyConfig int64 = -1

// ReconfigAsync queues a non-incremental reconfig: the ensemble's new
// membership is members, each a server spec as a dynamic configuration
// line has it ("server.4=host:2888:3888;2181"). The change is refused with
// BADVERSION unless the configuration's version is fromConfig (AnyConfig:
// any). The result is /zookeeper/config's data and Stat after the change.
// The ensemble must allow reconfig (reconfigEnabled) and the session
// needs WRITE on /zookeeper/config or the super user.
func (c *Conn) ReconfigAsync(members []string, fromConfig int64) *Call[GetResult] {
	return c.reconfigAsync(&zkproto.ReconfigRequest{NewMembers: strings.Join(members, ","), CurConfigID: fromConfig})
}

// Reconfig replaces the ensemble's membership (see ReconfigAsync) and
// returns the new configuration and its Stat.
func (c *Conn) Reconfig(ctx context.Context, members []string, fromConfig int64) ([]byte, *zkproto.Stat, error) {
	r, err := c.ReconfigAsync(members, fromConfig).Wait(ctx)
	return r.Data, r.Stat, err
}

// IncrementalReconfigAsync queues an incremental reconfig: the servers of
// joining (server specs, as for ReconfigAsync) are added and the server
// ids of leaving removed. Otherwise as ReconfigAsync.
func (c *Conn) IncrementalReconfigAsync(joining, leaving []string, fromConfig int64) *Call[GetResult] {
	return c.reconfigAsync(&zkproto.ReconfigRequest{
		JoiningServers: strings.Join(joining, ","),
		LeavingServers: strings.Join(leaving, ","),
		CurConfigID:    fromConfig,
	})
}

// IncrementalReconfig adds and removes servers (see
// IncrementalReconfigAsync) and returns the new configuration and its
// Stat.
func (c *Conn) IncrementalReconfig(ctx context.Context, joining, leaving []string, fromConfig int64) ([]byte, *zkproto.Stat, error) {
	r, err := c.IncrementalReconfigAsync(joining, leaving, fromConfig).Wait(ctx)
	return r.Data, r.Stat, err
}

func (c *Conn) reconfigAsync(req *zkproto.ReconfigRequest) *Call[GetResult] {
	// The answer is a getData's: the new configuration node.
	resp := &zkproto.GetDataResponse{}
	cl := newCall(zkproto.OpReconfig, req, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) (GetResult, error) {
		if cl.err != nil {
			return GetResult{}, cl.err
		}
		return GetResult{Data: resp.Data, Stat: statOf(resp.Stat)}, nil
	})
}
