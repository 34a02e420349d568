package fault

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// cutRule says which exchange a replyCutter cuts on a connection. A
// client write containing arm arms the connection; once armed, the
// server's reply is swallowed and both sides closed either at the first
// server chunk after a client write containing fireClient, or at the
// first server chunk containing fireServer. The server has then done the
// work and committed; only its answer is lost.
type cutRule struct {
	arm, fireClient, fireServer []byte
}

// replyCutter is a TCP proxy in front of a database server that loses the
// replies of a few chosen exchanges, as a network failure does between a
// commit and its acknowledgement.
type replyCutter struct {
	ln     net.Listener
	target string
	rule   cutRule
	budget atomic.Int64 // cuts left to make
	cuts   atomic.Int64 // cuts made
	wg     sync.WaitGroup
}

// startReplyCutter listens on a free local port and makes at most cuts cuts.
func startReplyCutter(t *testing.T, target string, rule cutRule, cuts int) *replyCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &replyCutter{ln: ln, target: target, rule: rule}
	p.budget.Store(int64(cuts))
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *replyCutter) addr() string { return p.ln.Addr().String() }

func (p *replyCutter) accept() {
	defer p.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() { defer conns.Done(); p.serve(c) }()
	}
}

// serve relays one connection, cutting it when the rule fires.
func (p *replyCutter) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	var armed, fire atomic.Bool
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); server.Close() }) }
	defer closeBoth()
	go func() {
		defer closeBoth()
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				if p.budget.Load() > 0 && bytes.Contains(chunk, p.rule.arm) {
					armed.Store(true)
				}
				if armed.Load() && p.rule.fireClient != nil && bytes.Contains(chunk, p.rule.fireClient) {
					fire.Store(true)
				}
				if _, werr := server.Write(chunk); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if armed.Load() && (fire.Load() || p.rule.fireServer != nil && bytes.Contains(chunk, p.rule.fireServer)) {
				if p.budget.Add(-1) >= 0 {
					p.cuts.Add(1)
					return // the reply is dropped; the deferred close cuts both sides
				}
				armed.Store(false)
				fire.Store(false)
			}
			if _, werr := client.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
