package sluice

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
)

// JobArgs is the payload of a typed job: a struct (or any JSON-encodable
// value) whose Kind names its job type. The payload is T encoded as JSON,
// so a typed job is an ordinary job to webhooks, the CLI and the dashboard.
// Kind must not depend on the value: a handler learns it from T's zero
// value.
type JobArgs interface {
	Kind() string
}

// Worker runs the jobs of T's kind with their payload decoded into T.
type Worker[T JobArgs] interface {
	Work(ctx context.Context, job *Job, args T) error
}

// WorkerFunc adapts a function to Worker.
type WorkerFunc[T JobArgs] func(ctx context.Context, job *Job, args T) error

// Work calls f.
func (f WorkerFunc[T]) Work(ctx context.Context, job *Job, args T) error { return f(ctx, job, args) }

// AddWorker registers w in types (Config.Types) under T's kind, with t's
// settings; t.Handler is replaced by one that decodes each payload into T.
// A payload that does not decode as T fails the job permanently, with an
// error naming T: the same bytes would fail every retry. AddWorker panics
// if the kind is already in types, as a second registration is a bug.
func AddWorker[T JobArgs](types map[string]Type, w Worker[T], t Type) {
	kind := KindOf[T]()
	if _, dup := types[kind]; dup {
		panic(fmt.Sprintf("sluice: AddWorker: job type %q is already registered", kind))
	}
	t.Handler = typedHandler[T]{w}
	types[kind] = t
}

// KindOf is T's job type name, its zero value's Kind. For a pointer type
// it is the Kind of a new zero element, so that *Args works as Args does.
func KindOf[T JobArgs]() string {
	rt := reflect.TypeFor[T]()
	v := reflect.New(rt).Elem()
	if rt.Kind() == reflect.Pointer {
		v = reflect.New(rt.Elem())
	}
	return v.Interface().(T).Kind()
}

// typedHandler decodes the payload into T and calls the worker.
type typedHandler[T JobArgs] struct{ w Worker[T] }

func (h typedHandler[T]) Work(ctx context.Context, job *Job) error {
	var args T
	if rt := reflect.TypeFor[T](); rt.Kind() == reflect.Pointer {
		args = reflect.New(rt.Elem()).Interface().(T)
	}
	if err := json.Unmarshal(job.Payload, &args); err != nil {
		return Permanent(fmt.Errorf("decode payload of job %d (type %s) as %s: %w", job.ID, job.Type, reflect.TypeFor[T](), err))
	}
	return h.w.Work(ctx, job, args)
}

// EnqueueArgs adds a job of args' kind with args as its payload; p gives
// the rest (Key, Queue, Delay, ...) and must leave Type and Payload empty,
// which args decides.
func (c *Client) EnqueueArgs(ctx context.Context, args JobArgs, p EnqueueParams) (EnqueueResult, error) {
	if err := withArgs(&p, args); err != nil {
		return EnqueueResult{}, err
	}
	return c.Enqueue(ctx, p)
}

// EnqueueArgsTx is EnqueueArgs inside the caller's transaction.
func (c *Client) EnqueueArgsTx(ctx context.Context, tx *sql.Tx, args JobArgs, p EnqueueParams) (EnqueueResult, error) {
	if err := withArgs(&p, args); err != nil {
		return EnqueueResult{}, err
	}
	return c.EnqueueTx(ctx, tx, p)
}

// withArgs sets p's Type and Payload from args.
func withArgs(p *EnqueueParams, args JobArgs) error {
	switch {
	case args == nil || reflect.ValueOf(args).Kind() == reflect.Pointer && reflect.ValueOf(args).IsNil():
		return inputErr("payload", "no args given")
	case p.Type != "":
		return inputErr("type", "%q given beside args %T, whose Kind decides it; leave it empty", p.Type, args)
	case p.Payload != nil:
		return inputErr("payload", "given beside args %T, which are the payload; leave it empty", args)
	}
	p.Type, p.Payload = args.Kind(), args
	return nil
}
