package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
)

// guardServer serves cfg (its Client filled in) on 127.0.0.1 and returns
// the base URL and the Client.
func guardServer(t *testing.T, cfg server.Config) (string, *sluice.Client) {
	t.Helper()
	c, err := sluice.NewClient(sluice.Config{Driver: testdb.Open(t, "sqlite")})
	require.NoError(t, err)
	cfg.Client = c
	h, err := server.New(cfg)
	require.NoError(t, err)
	return newTestServer(t, h), c
}

// raw sends one HTTP/1.1 request as written, so that the path, Host and
// headers are exactly what an attacker chooses, and returns the status.
func raw(t *testing.T, base, head, body string) (int, http.Header, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	if body != "" {
		head += fmt.Sprintf("Content-Length: %d\r\n", len(body))
	}
	_, err = io.WriteString(conn, head+"Connection: close\r\n\r\n"+body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestHostCheck(t *testing.T) {
	base, _ := guardServer(t, server.Config{Listen: "sluice-box:8080", AllowedHosts: []string{"Sluice.Example.COM"}})
	for host, want := range map[string]int{
		"127.0.0.1": 200, "127.0.0.1:9": 200, "[::1]:8080": 200, "localhost:8080": 200, "app.localhost": 200,
		"10.1.2.3:8080": 200, "sluice-box:8080": 200, "sluice.example.com": 200, "sluice.example.com.:443": 200,
		"evil.example": 421, "evil.example:8080": 421, "sluice.example.com.evil.example": 421, "localhost.evil.example": 421,
	} {
		code, _, body := raw(t, base, "GET /v1/stats HTTP/1.1\r\nHost: "+host+"\r\n", "")
		require.Equal(t, want, code, "Host: %s: %s", host, body)
		if want == 421 {
			require.Contains(t, body, "auth.allowed_hosts", "the refusal says what to configure")
		}
	}
	code, _, body := raw(t, base, "GET /jobs HTTP/1.1\r\nHost: evil.example\r\n", "")
	require.Equal(t, 421, code, "the dashboard too: %s", body)
	_, err := server.New(server.Config{Client: nil})
	require.Error(t, err)
	c, err := sluice.NewClient(sluice.Config{Driver: testdb.Open(t, "sqlite")})
	require.NoError(t, err)
	_, err = server.New(server.Config{Client: c, AllowedHosts: []string{"https://x.example"}})
	require.ErrorContains(t, err, "allowed_hosts[0]")
	_, err = server.New(server.Config{Client: c, PublicURL: "sluice.example.com"})
	require.ErrorContains(t, err, "public_url")
}

// TestStateChangesNeedProof: without tokens, a write needs a JSON body (or
// none) and no cross-origin browser headers.
func TestStateChangesNeedProof(t *testing.T) {
	base, _ := guardServer(t, server.Config{})
	job := `{"type":"t","key":"k"}`
	h := "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain; charset=utf-8, application/json"} {
		code, _, body := raw(t, base, h+"Content-Type: "+ct+"\r\n", job)
		require.Equal(t, http.StatusUnsupportedMediaType, code, "%s: %s", ct, body)
		require.Contains(t, body, "want application/json")
	}
	code, _, body := raw(t, base, h, job)
	require.Equal(t, http.StatusUnsupportedMediaType, code, "a body without a type: %s", body)
	for _, hdr := range []string{"Sec-Fetch-Site: cross-site\r\n", "Sec-Fetch-Site: same-site\r\n", "Origin: http://127.0.0.2:9999\r\n"} {
		code, _, body = raw(t, base, h+"Content-Type: application/json\r\n"+hdr, job)
		require.Equal(t, http.StatusForbidden, code, "%s: %s", hdr, body)
		require.Contains(t, body, "cross-origin")
		code, _, body = raw(t, base, "POST /queues/default/pause HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"+hdr, "x=1")
		require.Equal(t, http.StatusForbidden, code, "dashboard, %s: %s", hdr, body)
	}
	code, _, body = raw(t, base, "POST /queues/default/pause HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n", "x=1")
	require.Equal(t, http.StatusForbidden, code, "a form without the CSRF token: %s", body)
	require.Contains(t, body, "CSRF")
	code, _, body = raw(t, base, h+"Content-Type: application/json; charset=utf-8\r\nSec-Fetch-Site: same-origin\r\n", job)
	require.Equal(t, http.StatusCreated, code, body)
	code, _, body = raw(t, base, "POST /v1/queues/default/pause HTTP/1.1\r\nHost: 127.0.0.1\r\n", "")
	require.Equal(t, http.StatusOK, code, "curl -X POST without a body: %s", body)
	code, _, body = raw(t, base, "POST /v1/queues/default/resume HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\n", "")
	require.Equal(t, http.StatusOK, code, "curl -X POST -d '' (an empty form): %s", body)
}

func TestLoginRedirectIsLocal(t *testing.T) {
	base, _ := guardServer(t, server.Config{Tokens: []string{token}})
	origin, err := url.Parse(base)
	require.NoError(t, err)
	for _, next := range []string{
		"/\t/evil.example/", "/\n/evil.example/", "\t//evil.example/", " //evil.example/", "//evil.example/",
		"/\\evil.example/", "\\\\evil.example/", "/\\/evil.example/", "https://evil.example/", "http:evil.example",
		"javascript:alert(1)", "/\t\\evil.example", "\x00//evil.example", "/\r\n/evil.example",
	} {
		code, _, h := newBrowser(t, base).post("/login", url.Values{"token": {token}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, code)
		loc := h.Get("Location")
		// As the browser reads a URL: tabs and newlines dropped,
		// backslashes are slashes, leading spaces and controls trimmed.
		b := strings.Map(func(r rune) rune {
			switch r {
			case '\t', '\n', '\r':
				return -1
			case '\\':
				return '/'
			}
			return r
		}, strings.TrimLeft(loc, " \x00"))
		u, err := url.Parse(b)
		require.NoError(t, err, "next=%q gave Location %q", next, loc)
		got := origin.ResolveReference(u)
		require.Equal(t, origin.Host, got.Host, "next=%q gave Location %q", next, loc)
		require.Equal(t, "http", got.Scheme, "next=%q gave Location %q", next, loc)
	}
	_, _, h := newBrowser(t, base).post("/login", url.Values{"token": {token}, "next": {"/jobs?status=failed"}})
	require.Equal(t, "/jobs?status=failed", h.Get("Location"), "a local path is kept")
}

// TestLoginBrake: 200 wrong tokens from one address are answered, but
// only the first few are checked; the waits grow; the right token still
// logs in at once from another address; many addresses together are
// braked too; the metric counts both kinds. The brake's clock is a manual
// one that moves only when the test says, so that no request's duration
// (a loaded machine takes seconds for 200) can let a wait expire.
func TestLoginBrake(t *testing.T) {
	clk := clock.NewManual(time.Now())
	base, c := guardServer(t, server.Config{Tokens: []string{token}, Clock: clk.Now})
	from := func(ip string) *browser { return fromAddr(t, base, ip) }
	attacker := from("127.0.0.7")
	checked, throttled := 0, 0
	var retry string
	for i := range 200 {
		code, _, h := attacker.post("/login", url.Values{"token": {fmt.Sprintf("guess-%d", i)}})
		switch code {
		case http.StatusForbidden:
			checked++
		case http.StatusTooManyRequests:
			throttled++
			retry = h.Get("Retry-After")
		default:
			t.Fatalf("attempt %d: status %d", i, code)
		}
	}
	t.Logf("200 wrong tokens from one address: %d checked, %d throttled", checked, throttled)
	require.Equal(t, 3, checked, "three free failures, then a wait")
	require.Equal(t, 200-checked, throttled)
	require.Equal(t, "1", retry)
	// Just before the wait ends the address still waits; past it, one more
	// is checked, and the next wait doubles.
	clk.Advance(time.Second - time.Millisecond)
	code, _, _ := attacker.post("/login", url.Values{"token": {"guess-200"}})
	require.Equal(t, http.StatusTooManyRequests, code)
	clk.Advance(time.Millisecond)
	code, _, _ = attacker.post("/login", url.Values{"token": {"guess-201"}})
	require.Equal(t, http.StatusForbidden, code)
	code, _, h := attacker.post("/login", url.Values{"token": {"guess-202"}})
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "2", h.Get("Retry-After"))
	// Even the right token waits on the braked address…
	code, _, _ = attacker.post("/login", url.Values{"token": {token}})
	require.Equal(t, http.StatusTooManyRequests, code)
	// …but another address logs in at once.
	require.Equal(t, http.StatusSeeOther, from("127.0.0.8").login(token))

	require.Equal(t, float64(checked+1), c.Metrics().Value("sluice_login_failures_total", "wrong_token"))
	require.Equal(t, float64(throttled+3), c.Metrics().Value("sluice_login_failures_total", "throttled"))

	// Many addresses, one guess each: the overall bucket runs dry. Of its
	// burst of 50, the second the clock moved refilled what the first three
	// wrong tokens took, the fourth took one, a correct token takes none,
	// and the stopped clock refills none while the 80 are answered.
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := from(fmt.Sprintf("127.0.1.%d", i+1)).post("/login", url.Values{"token": {"wrong"}})
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("80 addresses, one wrong token each: %v", codes)
	require.Equal(t, map[int]int{http.StatusForbidden: 49, http.StatusTooManyRequests: 31}, codes)
}

// fromAddr is a client of base whose connections come from ip (any
// 127.0.0.0/8 address on Linux), as a client on another machine.
func fromAddr(t *testing.T, base, ip string) *browser {
	b := newBrowser(t, base)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	b.hc.Transport = &http.Transport{DialContext: d.DialContext}
	return b
}

// bearer sends GET path with tok as its Bearer token.
func (b *browser) bearer(path, tok string) (int, http.Header) {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.base+path, nil)
	require.NoError(b.t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := b.hc.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, resp.Header
}

// TestAPIBrake: wrong Bearer tokens are braked like the login's, by the
// same brake: after three from one address every door that takes a token
// (the API, /metrics, /readyz, the login form) refuses that address
// unchecked, the right token included, while another address gets in.
// Requests without a token are not guesses and are not counted.
func TestAPIBrake(t *testing.T) {
	clk := clock.NewManual(time.Now())
	base, _ := guardServer(t, server.Config{Tokens: []string{token}, Clock: clk.Now})
	attacker := fromAddr(t, base, "127.0.0.7")
	for range 5 {
		code, _ := attacker.bearer("/v1/stats", "")
		require.Equal(t, http.StatusUnauthorized, code)
	}
	codes := map[int]int{}
	for i := range 200 {
		code, _ := attacker.bearer("/v1/stats", fmt.Sprintf("guess-%d", i))
		codes[code]++
	}
	require.Equal(t, map[int]int{http.StatusForbidden: 3, http.StatusTooManyRequests: 197}, codes)
	for _, path := range []string{"/v1/jobs", "/metrics", "/readyz"} {
		code, h := attacker.bearer(path, token)
		require.Equal(t, http.StatusTooManyRequests, code, path)
		require.Equal(t, "1", h.Get("Retry-After"), path)
	}
	require.Equal(t, http.StatusTooManyRequests, attacker.login(token), "the login form shares the brake")
	code, _ := fromAddr(t, base, "127.0.0.8").bearer("/v1/stats", token)
	require.Equal(t, http.StatusOK, code, "another address gets in")

	clk.Advance(time.Second)
	code, _ = attacker.bearer("/v1/stats", token)
	require.Equal(t, http.StatusOK, code, "past its wait the address is checked again")
}

// TestNoGlobalLockout: an attacker guessing from many addresses at once
// empties the shared bucket, so that an address the server has not seen
// is refused even with the right token; the operator's client, which
// presented the right token earlier, still gets in through the API and
// the login form. The brake's clock stands still, so the bucket does not
// refill while the attack runs.
func TestNoGlobalLockout(t *testing.T) {
	clk := clock.NewManual(time.Now())
	base, _ := guardServer(t, server.Config{Tokens: []string{token}, Clock: clk.Now})
	operator := fromAddr(t, base, "127.0.0.9")
	code, _ := operator.bearer("/v1/stats", token)
	require.Equal(t, http.StatusOK, code)
	clk.Advance(time.Hour)

	codes := map[int]int{}
	for i := range 120 {
		code, _ := fromAddr(t, base, fmt.Sprintf("127.0.%d.%d", 1+i/40, 1+i%40)).bearer("/v1/stats", fmt.Sprintf("guess-%d", i))
		codes[code]++
	}
	require.Equal(t, map[int]int{http.StatusForbidden: 50, http.StatusTooManyRequests: 70}, codes, "the bucket's burst of 50, then none")
	code, _ = fromAddr(t, base, "127.0.9.9").bearer("/v1/stats", token)
	require.Equal(t, http.StatusTooManyRequests, code, "an unknown address waits on the bucket")
	code, _ = operator.bearer("/v1/stats", token)
	require.Equal(t, http.StatusOK, code, "the operator's client gets in")
	require.Equal(t, http.StatusSeeOther, operator.login(token), "and logs in")
}

// TestDeviceCookie: a browser that logged in gets a device cookie, by
// which it logs in again while an attack keeps the shared bucket empty,
// from an address the server has never seen; the same address without
// the cookie, or with one the server did not set, waits on the bucket.
// Past brake.TrustFor the cookie counts for nothing.
func TestDeviceCookie(t *testing.T) {
	clk := clock.NewManual(time.Now())
	base, _ := guardServer(t, server.Config{Tokens: []string{token}, Clock: clk.Now})
	laptop := fromAddr(t, base, "127.0.0.9")
	require.Equal(t, http.StatusSeeOther, laptop.login(token))
	u, err := url.Parse(base)
	require.NoError(t, err)
	var device *http.Cookie
	for _, c := range laptop.hc.Jar.Cookies(u) {
		if c.Name == "sluice_device" {
			device = c
		}
	}
	require.NotNil(t, device, "a login sets the device cookie")

	attack := func() {
		for i := range 120 {
			code, _ := fromAddr(t, base, fmt.Sprintf("127.0.%d.%d", 1+i/40, 1+i%40)).bearer("/v1/stats", "guess")
			require.NotEqual(t, http.StatusOK, code)
		}
	}
	// The laptop moves to another network: a new address, its cookie kept.
	moved := func(cookie *http.Cookie) *browser {
		b := fromAddr(t, base, "127.0.5.5")
		if cookie != nil {
			b.hc.Jar.SetCookies(u, []*http.Cookie{cookie})
		}
		return b
	}
	clk.Advance(time.Hour)
	attack()
	require.Equal(t, http.StatusTooManyRequests, moved(nil).login(token), "a new address without the cookie waits")
	forged := *device
	forged.Value = strings.Repeat("A", len(device.Value))
	require.Equal(t, http.StatusTooManyRequests, moved(&forged).login(token), "a cookie the server did not set counts for nothing")
	require.Equal(t, http.StatusSeeOther, moved(device).login(token), "the laptop logs in from its new address")

	clk.Advance(25 * time.Hour)
	attack()
	require.Equal(t, http.StatusTooManyRequests, moved(device).login(token), "trust lapses")
}

// TestTokensNeverLogged sends a token in every place a request can carry
// one and reads the request log.
func TestTokensNeverLogged(t *testing.T) {
	const tok = "tok-Zq9-secret-7Gm2Xw5Hb8Ns4Kv1"
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	base, _ := guardServer(t, server.Config{Tokens: []string{tok}, Logger: log})
	for _, target := range []string{
		"/v1/jobs?token=" + tok, "/v1/jobs%3Ftoken=" + tok, "/v1/jobs%3Ftoken%3D" + tok, "/v1/jobs%253Ftoken%253D" + tok,
		"/v1/jobs?TOKEN=" + tok, "/v1/jobs?access_token=" + tok, "/v1/jobs?%74oken=" + tok, "/v1/" + tok, "/v1/jobs/%74ok-Zq9-secret-7Gm2Xw5Hb8Ns4Kv1",
		"/jobs?next=%2Fv1%3Ftoken%3D" + tok, "/v1/jobs;token=" + tok, "/v1/jobs?x=1&token=" + tok + "&y=2",
		// A stray "%" must not stop the decoding of the rest.
		"/v1/jobs?q=100%&x=%74ok-Zq9-secret-7Gm2Xw5Hb8Ns4Kv1", "/v1/jobs?q=100%&%74oken=" + url.QueryEscape(tok) + "x",
	} {
		raw(t, base, "GET "+target+" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+tok+"\r\nX-Token: "+tok+"\r\n", "")
	}
	raw(t, base, "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n", "token="+tok)
	raw(t, base, "POST /login?token="+tok+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n", "token=nearly-"+tok)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	require.Equal(t, 16, strings.Count(out, `msg="http request"`), out)
	for _, form := range []string{tok, "Zq9-secret", "%74ok-Zq9", url.QueryEscape(tok)} {
		require.NotContains(t, out, form, "the log holds the token:\n%s", out)
	}
	require.Contains(t, out, "REDACTED")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestSecureCookieBehindProxy: the session cookie is Secure when a
// trusted proxy says the browser used https, or public_url is https;
// never on a forged X-Forwarded-Proto.
func TestSecureCookieBehindProxy(t *testing.T) {
	secure := func(cfg server.Config, hdr string) bool {
		t.Helper()
		cfg.Tokens = []string{token}
		base, _ := guardServer(t, cfg)
		code, h, body := raw(t, base, "POST /login HTTP/1.1\r\nHost: sluice.example.com\r\nContent-Type: application/x-www-form-urlencoded\r\n"+hdr, "token="+token)
		require.Equal(t, http.StatusSeeOther, code, body)
		ck := h.Get("Set-Cookie")
		require.Contains(t, ck, "sluice_session=")
		if !strings.Contains(ck, "; Secure") {
			require.True(t, strings.HasPrefix(ck, "sluice_session="), ck)
			return false
		}
		// Over HTTPS the cookie is __Host- prefixed, and the session
		// works with it (and only with it) on the next request.
		require.True(t, strings.HasPrefix(ck, "__Host-sluice_session="), ck)
		require.True(t, strings.HasPrefix(h.Values("Set-Cookie")[1], "__Host-sluice_device="), "the device cookie too")
		require.Contains(t, h.Values("Set-Cookie")[1], "; Secure")
		pair, _, _ := strings.Cut(ck, ";")
		code, _, _ = raw(t, base, "GET /jobs HTTP/1.1\r\nHost: sluice.example.com\r\nCookie: "+pair+"\r\n"+hdr, "")
		require.Equal(t, http.StatusOK, code, "the __Host- session cookie is read back")
		code, _, _ = raw(t, base, "GET /jobs HTTP/1.1\r\nHost: sluice.example.com\r\nCookie: "+strings.TrimPrefix(pair, "__Host-")+"\r\n"+hdr, "")
		require.NotEqual(t, http.StatusOK, code, "an unprefixed cookie (a sibling subdomain could set one) is not a session over HTTPS")
		return true
	}
	hosts := []string{"sluice.example.com"}
	require.True(t, secure(server.Config{AllowedHosts: hosts, TrustedProxies: []string{"127.0.0.0/8"}}, "X-Forwarded-Proto: https\r\n"))
	require.False(t, secure(server.Config{AllowedHosts: hosts, TrustedProxies: []string{"127.0.0.0/8"}}, "X-Forwarded-Proto: http\r\n"))
	require.False(t, secure(server.Config{AllowedHosts: hosts, TrustedProxies: []string{"10.0.0.0/8"}}, "X-Forwarded-Proto: https\r\n"), "an untrusted client cannot claim https")
	require.False(t, secure(server.Config{AllowedHosts: hosts}, "X-Forwarded-Proto: https\r\n"))
	require.True(t, secure(server.Config{PublicURL: "https://sluice.example.com"}, ""), "public_url allows its host and makes the cookie Secure")
}

// TestLoginBrakeBehindProxy: behind a trusted proxy the brake counts the
// client in X-Forwarded-For, so one client's failures do not lock out
// another; IPv6 clients count by /64.
func TestLoginBrakeBehindProxy(t *testing.T) {
	base, _ := guardServer(t, server.Config{Tokens: []string{token}, TrustedProxies: []string{"127.0.0.0/8"}})
	login := func(xff, tok string) int {
		code, _, _ := raw(t, base, "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nX-Forwarded-For: "+xff+"\r\n", "token="+tok)
		return code
	}
	for _, client := range []string{"203.0.113.5", "2001:db8:1:2::5"} {
		for i := range 3 {
			require.Equal(t, http.StatusForbidden, login(client, "wrong"), "%s attempt %d", client, i)
		}
		require.Equal(t, http.StatusTooManyRequests, login(client, "wrong"), client)
	}
	require.Equal(t, http.StatusTooManyRequests, login("2001:db8:1:2::6", token), "the same /64 waits")
	require.Equal(t, http.StatusTooManyRequests, login("198.51.100.1, 203.0.113.5", token), "entries left of the proxy's are the client's to forge")
	require.Equal(t, http.StatusSeeOther, login("203.0.113.6", token), "another client logs in")
	require.Equal(t, http.StatusSeeOther, login("2001:db8:1:3::5", token), "another /64 logs in")
}
