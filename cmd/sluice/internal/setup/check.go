package setup

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// Check applies to a file that package config accepted the rules of the
// packages it describes: the names the database stores, the library's
// limits, the server's host names, the webhooks' URLs and headers, the
// batches' SQL. Each problem is a *config.Error at the file's key. Names
// are visited in sorted order so that a file with several problems
// always reports the same one.
func Check(f *config.File) error {
	for i, h := range f.Auth.AllowedHosts {
		if err := server.CheckAllowedHost(h); err != nil {
			return f.ErrorAt(fmt.Sprintf("auth.allowed_hosts[%d]", i), err)
		}
	}
	if f.Auth.PublicURL != "" {
		if _, err := server.ParsePublicURL(f.Auth.PublicURL); err != nil {
			return f.ErrorAt("auth.public_url", err)
		}
	}
	for _, sec := range []struct {
		names []string
		check func(f *config.File, name string) error
	}{
		{sortedKeys(f.Queues), checkQueue},
		{sortedKeys(f.Types), checkType},
		{sortedKeys(f.Schedules), checkSchedule},
		{sortedKeys(f.Batches), checkBatch},
	} {
		for _, name := range sec.names {
			if err := sec.check(f, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkQueue(f *config.File, name string) error {
	path := "queues." + name
	if err := sluicetype.CheckName(name, sluicetype.MaxQueueLen); err != nil {
		return f.ErrorAt(path, err)
	}
	return inputError(f, path, sluice.CheckQueueConfig(Queue(f.Queues[name])))
}

// inputError reports the library's *sluice.InputError at the key it names
// under path.
func inputError(f *config.File, path string, err error) error {
	var in *sluice.InputError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &in):
		return f.ErrorAt(path+"."+in.Field, errors.New(in.Msg))
	}
	return f.ErrorAt(path, err)
}

// checkQueueRef reports a queue that no worker here would run: with queues
// configured, a job sent anywhere else would wait forever.
func checkQueueRef(f *config.File, path, queue string) error {
	if err := sluicetype.CheckName(queue, sluicetype.MaxQueueLen); err != nil {
		return f.ErrorAt(path, err)
	}
	if len(f.Queues) > 0 {
		if _, ok := f.Queues[queue]; !ok {
			return f.ErrorAt(path, fmt.Errorf("queue %q is not defined under queues (defined: %s)", queue,
				strings.Join(sortedKeys(f.Queues), ", ")))
		}
	}
	return nil
}

func checkType(f *config.File, name string) error {
	path := "types." + name
	ft := f.Types[name]
	if err := sluicetype.CheckName(name, sluicetype.MaxTypeLen); err != nil {
		return f.ErrorAt(path, err)
	}
	// The settings as the library will run them: with its defaults.
	t := Type(ft).WithDefaults()
	if err := checkQueueRef(f, path+".queue", t.Queue); err != nil {
		return err
	}
	// Before the defaults, which would replace a bad burst.
	if err := inputError(f, path, sluice.CheckTypeConfig(Type(ft))); err != nil {
		return err
	}
	if ft.HTTP != nil {
		if err := checkHTTP(f, path+".http", ft.HTTP); err != nil {
			return err
		}
	}
	switch {
	case t.Backoff.Base > t.Backoff.Max:
		return f.ErrorAt(path+".backoff", fmt.Errorf("base %s is longer than max %s", t.Backoff.Base, t.Backoff.Max))
	// An unset max_cooldown is the library's, never shorter than the
	// cooldown; one the file sets must not be.
	case f.IsSet(path+".circuit.max_cooldown") && ft.Circuit.MaxCooldown < t.Circuit.Cooldown:
		return f.ErrorAt(path+".circuit.max_cooldown", fmt.Errorf("%s is shorter than the cooldown %s", ft.Circuit.MaxCooldown, t.Circuit.Cooldown))
	case t.Dedupe != sluicetype.DedupePermanent && t.Dedupe != sluicetype.DedupeActive:
		return f.ErrorAt(path+".dedupe", fmt.Errorf("invalid value %q: want %s or %s", t.Dedupe, sluicetype.DedupePermanent, sluicetype.DedupeActive))
	}
	return nil
}

// checkHTTP applies the webhook package's rules to a webhook of a type or
// of a batch sink. A header whose variable is unset is checked where it
// is used (config.File.Unresolved).
func checkHTTP(f *config.File, path string, h *config.HTTP) error {
	if err := webhook.CheckURL(h.URL); err != nil {
		return f.ErrorAt(path+".url", err)
	}
	for _, name := range sortedKeys(h.Headers) {
		p := path + ".headers." + name
		if err := webhook.CheckHeader(name, h.Headers[name]); err != nil && f.Unresolved(p) == nil {
			return f.ErrorAt(p, err)
		}
	}
	return nil
}

func checkSchedule(f *config.File, name string) error {
	path := "schedules." + name
	s := f.Schedules[name]
	if s.Queue != "" {
		if err := checkQueueRef(f, path+".queue", s.Queue); err != nil {
			return err
		}
	}
	if s.Overlap != "" && s.Overlap != sluice.OverlapForbid && s.Overlap != sluice.OverlapAllow {
		return f.ErrorAt(path+".overlap", fmt.Errorf("invalid value %q: want %s or %s", s.Overlap, sluice.OverlapForbid, sluice.OverlapAllow))
	}
	return nil
}
