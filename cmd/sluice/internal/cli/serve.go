package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/server"
)

func (a *app) serveCommand() *cobra.Command {
	var listen string
	var noWorkers bool
	var shutdown time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API with the workers, scheduler and maintenance",
		Long: `Serve the HTTP API (jobs, the /v1/run cron trigger, stats, queues, health),
the dashboard at / (log in with an auth token) and Prometheus metrics at
/metrics (Bearer token, like the API), and run the workers, schedules and maintenance from the config. A listen
address that is not loopback needs auth.tokens in the config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := a.loadConfig()
			if err != nil {
				return err
			}
			if err := f.Unresolved("auth"); err != nil {
				return usagef("%v", err)
			}
			if listen == "" {
				listen = f.Listen
			}
			if listen == "" {
				listen = "127.0.0.1:8080"
			}
			if err := config.CheckListen(listen); err != nil {
				return usagef("listen address: %v", err)
			}
			if err := server.CheckListen(listen, len(f.Auth.Tokens) > 0); err != nil {
				return usagef("%v", err)
			}
			c, err := a.workerClient(cmd.Context())
			if err != nil {
				return err
			}
			var cidrs []string
			for _, p := range f.Auth.AllowCIDRs {
				cidrs = append(cidrs, p.String())
			}
			var proxies []string
			for _, p := range f.Auth.TrustedProxies {
				proxies = append(proxies, p.String())
			}
			h, err := server.New(server.Config{Client: c, ScopedTokens: a.serverTokens(f.Auth), AllowCIDRs: cidrs,
				QueryToken: f.Auth.QueryToken, Logger: a.log, Listen: listen, AllowedHosts: f.Auth.AllowedHosts,
				TrustedProxies: proxies, PublicURL: f.Auth.PublicURL})
			if err != nil {
				return usagef("%v", err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
			if !noWorkers {
				if err := c.Start(context.WithoutCancel(cmd.Context())); err != nil {
					ln.Close()
					return err
				}
			} else {
				// Start refreshes the /metrics queue gauges; without it the
				// server does so itself.
				c.StartGauges(cmd.Context())
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			a.log.Info("serving", "listen", ln.Addr().String(), "workers", !noWorkers)
			fmt.Fprintf(a.stderr, "sluice: listening on http://%s\n", ln.Addr())
			select {
			case err := <-served:
				stopClient(c, shutdown)
				return fmt.Errorf("http server: %w", err)
			case <-cmd.Context().Done():
			}
			a.log.Info("signal received; shutting down", "deadline", shutdown)
			ctx, cancel := context.WithTimeout(context.Background(), shutdown)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				a.log.Warn("http shutdown", "err", err)
			}
			c.Stop(ctx)
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on (default: the config's listen, else 127.0.0.1:8080)")
	cmd.Flags().BoolVar(&noWorkers, "no-workers", false, "serve the API only; run no workers, schedules or maintenance")
	cmd.Flags().DurationVar(&shutdown, "shutdown-timeout", 30*time.Second, "how long running jobs get to finish on SIGTERM")
	return cmd
}

// serverTokens is auth.tokens for the server, each named by its name or,
// written as a plain string, by its key path. A plain one can do
// everything, as before scopes: it is warned of once, by that path,
// never by its value.
func (a *app) serverTokens(auth config.Auth) []server.Token {
	var out []server.Token
	for i, t := range auth.Tokens {
		name := t.Name
		if t.Plain {
			name = fmt.Sprintf("auth.tokens[%d]", i)
			a.log.Warn("an auth token without a scope can do everything (scope admin): write it as a mapping with name, token and scope (read, enqueue, operate or admin) to limit it; see docs/config.md",
				"token", name)
		}
		out = append(out, server.Token{Name: name, Value: t.Token, Scope: server.Scope(t.Scope), Types: t.Types, Queues: t.Queues})
	}
	return out
}

func stopClient(c *sluice.Client, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c.Stop(ctx)
}
