package lock

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The key's value is "TOKEN ID UNIXMILLI": the token proves ownership, the
// rest names the holder to contenders. The fence counter sits in a
// companion key with the same hash tag, so that both live in one cluster
// slot and one script may touch them.
var (
	// acquireScript sets the key if it is free and then counts the
	// acquisition, or returns the holder's value.
	acquireScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
return {0, redis.call('GET', KEYS[1]) or ''}`)
	// renewScript extends the key only if it still holds our value, so a
	// holder whose lease lapsed cannot extend its successor's.
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)
	// releaseScript is the compare-and-delete: a plain DEL after a lapse
	// would free a lock someone else now holds.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
)

type redisLocker struct {
	c  *redis.Client
	id string
}

func openRedis(rawURL string, opts Options) (*redisLocker, error) {
	// The database number is required: go-redis reads a URL without one
	// as database 0, and two teams' locks that silently share a database
	// exclude each other.
	if u, err := url.Parse(rawURL); err == nil && strings.Trim(u.Path, "/") == "" {
		return nil, fmt.Errorf("lock backend %s: no database number: want redis://HOST:PORT/DB, such as redis://%s/0", redact(rawURL), u.Host)
	}
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("lock backend %s: %w", redact(rawURL), err)
	}
	return &redisLocker{c: redis.NewClient(o), id: opts.ID}, nil
}

func redisKeys(name string) []string {
	k := "sluice:lock:{" + name + "}"
	return []string{k, k + ":fence"}
}

func (r *redisLocker) TryAcquire(ctx context.Context, name string, ttl time.Duration) (Lease, Holder, error) {
	if err := checkTTLAcquire(name, ttl); err != nil {
		return nil, Holder{}, err
	}
	value := token() + " " + r.id + " " + strconv.FormatInt(time.Now().UnixMilli(), 10)
	keys := redisKeys(name)
	res, err := acquireScript.Run(ctx, r.c, keys, value, ttl.Milliseconds()).Slice()
	if err != nil {
		return nil, Holder{}, fmt.Errorf("redis lock %s: acquire: %w", name, err)
	}
	if len(res) != 2 {
		return nil, Holder{}, fmt.Errorf("redis lock %s: acquire script returned %v", name, res)
	}
	if ok, _ := res[0].(int64); ok != 1 {
		held, _ := res[1].(string)
		return nil, parseRedisHolder(held), nil
	}
	fence, _ := res[1].(int64)
	key := redisKey{c: r.c, key: keys[0], value: value}
	return &ttlLease{backend: "redis lock", name: name, ttl: ttl, fence: fence, store: key}, Holder{}, nil
}

func parseRedisHolder(v string) Holder {
	// The ID sits between the token and the time and may itself hold spaces.
	_, rest, ok := strings.Cut(v, " ")
	i := strings.LastIndexByte(rest, ' ')
	if !ok || i < 0 {
		return Holder{}
	}
	ms, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil {
		return Holder{ID: rest}
	}
	return Holder{ID: rest[:i], Since: time.UnixMilli(ms)}
}

func (r *redisLocker) Close() error { return r.c.Close() }

// redisKey is one acquisition's key and the value that proves it ours.
type redisKey struct {
	c     *redis.Client
	key   string
	value string
}

// redisLost is the one thing a compare-and-set on the key can tell.
const redisLost = "the key expired or holds another token"

func (k redisKey) extend(ctx context.Context, ttl time.Duration) (string, error) {
	n, err := renewScript.Run(ctx, k.c, []string{k.key}, k.value, ttl.Milliseconds()).Int64()
	if err != nil || n == 1 {
		return "", err
	}
	return redisLost, nil
}

func (k redisKey) release(ctx context.Context) (string, error) {
	n, err := releaseScript.Run(ctx, k.c, []string{k.key}, k.value).Int64()
	if err != nil || n == 1 {
		return "", err
	}
	return redisLost, nil
}
