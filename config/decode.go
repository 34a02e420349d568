package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/internal/dur"
)

// decoder walks the YAML node tree into the File structs itself, rather
// than through yaml.v3's Decode with KnownFields: that reports "line 12:
// field comand not found in type config.Type", with neither the key path
// nor the file, and stops at type errors with Go type names. Walking the
// nodes gives every error its key path and line, and is where ${VAR}
// expansion happens, value by value.
type decoder struct {
	file string
	// lines records the line of every key path set in the file, so that
	// validation errors, found after decoding, can point at the line.
	lines map[string]int
	// unresolved holds, by key path, the secrets whose environment
	// variable is unset (see secretPath); their value is left empty.
	unresolved map[string]error
}

// secretPath reports whether the value at path is a secret that only some
// commands use: an API token, a webhook's signing secret or header, or a
// command's environment. An
// unset variable there fails those commands alone (File.Unresolved), so
// that `sluice jobs show` needs neither the server's tokens nor the
// handlers' secrets.
func secretPath(path string) bool {
	if rest, ok := strings.CutPrefix(path, "auth.tokens["); ok {
		// The token itself, plain or under token:; a name or scope is
		// needed by every command and must resolve.
		_, field, _ := strings.Cut(rest, "]")
		return field == "" || field == ".token"
	}
	rest, ok := strings.CutPrefix(path, "types.")
	if !ok {
		return false
	}
	if _, _, env := strings.Cut(rest, ".env."); env {
		return true
	}
	_, field, ok := strings.Cut(rest, ".http.")
	return ok && (field == "secret" || strings.HasPrefix(field, "headers."))
}

// defaulter is implemented by structs whose zero value is not their
// default. Defaults are set before decoding, so an explicit value that
// the default would hide (concurrency: 0) is still seen and rejected.
type defaulter interface{ setDefaults() }

func (d *decoder) errorf(path string, line int, format string, args ...any) error {
	return &Error{File: d.file, Path: path, Line: line, Err: fmt.Errorf(format, args...)}
}

func (d *decoder) wrap(path string, line int, err error) error {
	return &Error{File: d.file, Path: path, Line: line, Err: err}
}

func (d *decoder) decodeFile(data []byte) (*File, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		if line := tabLine(data, err); line > 0 {
			return nil, d.errorf("", line, "a tab character: tabs are not allowed for indentation in YAML; indent with spaces")
		}
		return nil, d.wrap("", 0, errors.New(strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, d.errorf("", extra.Line, "more than one YAML document; sluice reads one")
	}
	f := new(File)
	f.setDefaults()
	if len(doc.Content) == 0 {
		return f, nil // an empty file: every default
	}
	if err := d.decode(doc.Content[0], "", reflect.ValueOf(f).Elem()); err != nil {
		return nil, err
	}
	return f, nil
}

// yamlLine finds the line of a yaml.v3 syntax error ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): found character that cannot start any token`)

// tabLine is the line of a syntax error that a tab on that line caused,
// which yaml.v3 reports only as "found character that cannot start any
// token"; 0 for any other error.
func tabLine(data []byte, err error) int {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) || !strings.Contains(lines[n-1], "\t") {
		return 0
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// newValue returns an addressable zero T with its defaults set.
func newValue(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if dv, ok := p.Interface().(defaulter); ok {
		dv.setDefaults()
	}
	return p.Elem()
}

// decode sets v from n. A null value (a key with nothing after it) leaves
// v as it was, that is at its default, as if the key were absent.
func (d *decoder) decode(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if isNull(n) {
		return nil
	}
	switch p := v.Addr().Interface().(type) {
	case *time.Duration:
		s, err := d.scalar(n, path, "a duration")
		if err != nil {
			return err
		}
		if *p, err = dur.Parse(s.Value); err != nil {
			return d.wrap(path, n.Line, err)
		}
		return nil
	case *Rate:
		s, err := d.scalar(n, path, "a rate")
		if err != nil {
			return err
		}
		if *p, err = parseRate(s.Value); err != nil {
			return d.wrap(path, n.Line, err)
		}
		return nil
	case *netip.Prefix:
		s, err := d.scalar(n, path, "a CIDR")
		if err != nil {
			return err
		}
		prefix, err := netip.ParsePrefix(s.Value)
		if err != nil {
			return d.errorf(path, n.Line, "invalid CIDR %q: want an address and a prefix length, such as 10.0.0.0/8 or 127.0.0.1/32", s.Value)
		}
		*p = prefix.Masked()
		return nil
	case *json.RawMessage:
		return d.decodeJSON(n, path, p)
	case *Statements:
		if n.Kind == yaml.ScalarNode {
			s, err := d.scalar(n, path, "a statement")
			if err != nil {
				return err
			}
			*p = Statements{s.Value}
			return nil
		}
	case *Token:
		if n.Kind == yaml.ScalarNode {
			// The form from before scopes: a bare token, which can do
			// everything. A mapping is decoded as the struct below.
			s, err := d.scalar(n, path, "a token")
			if err != nil {
				return err
			}
			*p = Token{Token: s.Value, Scope: "admin", Plain: true}
			return nil
		}
	case *Argv:
		if n.Kind == yaml.ScalarNode {
			return d.errorf(path, n.Line, "must be an argv list such as %s, not a string: commands run without a shell",
				argvHint(n.Value))
		}
	}

	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, path, v)
	case reflect.Map:
		return d.decodeMap(n, path, v)
	case reflect.Slice:
		return d.decodeSlice(n, path, v)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(newValue(v.Type().Elem()).Addr())
		}
		return d.decode(n, path, v.Elem())
	case reflect.String:
		s, err := d.scalar(n, path, "a string")
		if err != nil {
			return err
		}
		v.SetString(s.Value)
		return nil
	case reflect.Int, reflect.Float64, reflect.Bool:
		want := scalarKinds[v.Kind()]
		s, err := d.scalar(n, path, want)
		if err != nil {
			return err
		}
		x := reflect.New(v.Type())
		if retyped(n, s).Decode(x.Interface()) != nil {
			return d.errorf(path, n.Line, "want %s, got %q", want, s.Value)
		}
		v.Set(x.Elem())
		return nil
	}
	// Only reachable by adding a field of a new kind to the structs.
	panic(fmt.Sprintf("config: no decoder for %s at %s", v.Type(), path))
}

// scalarKinds names the values of the kinds YAML decodes for us, in
// errors: "want an integer".
var scalarKinds = map[reflect.Kind]string{reflect.Int: "an integer", reflect.Float64: "a number", reflect.Bool: "true or false"}

func (d *decoder) decodeStruct(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(path, n.Line, "want a mapping, got %s", kindName(n))
	}
	fields := map[string]int{}
	var names []string
	for i := range v.NumField() {
		name := v.Type().Field(i).Tag.Get("yaml")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
		names = append(names, name)
	}
	entries, err := d.entries(n, path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := join(path, e.key.Value)
		i, ok := fields[e.key.Value]
		if !ok {
			return d.errorf(p, e.key.Line, "unknown key (known keys here: %s)", strings.Join(names, ", "))
		}
		d.lines[p] = e.key.Line
		if err := d.decode(e.value, p, v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) decodeMap(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(path, n.Line, "want a mapping of names, got %s", kindName(n))
	}
	entries, err := d.entries(n, path)
	if err != nil {
		return err
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(entries)))
	}
	for _, e := range entries {
		p := join(path, e.key.Value)
		if e.key.Value == "" {
			return d.errorf(p, e.key.Line, "empty name")
		}
		if strings.Contains(e.key.Value, "${") {
			return d.errorf(p, e.key.Line, "names are not expanded from the environment, only values are")
		}
		d.lines[p] = e.key.Line
		elem := newValue(v.Type().Elem())
		if err := d.decode(e.value, p, elem); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(e.key.Value), elem)
	}
	return nil
}

func (d *decoder) decodeSlice(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind != yaml.SequenceNode {
		return d.errorf(path, n.Line, "want a list, got %s", kindName(n))
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		p := path + "[" + strconv.Itoa(i) + "]"
		d.lines[p] = c.Line
		if err := d.decode(c, p, s.Index(i)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// decodeJSON turns any YAML value into JSON, expanding ${VAR} in its
// scalars, for payloads.
func (d *decoder) decodeJSON(n *yaml.Node, path string, out *json.RawMessage) error {
	expanded, err := d.expandTree(n, path)
	if err != nil {
		return err
	}
	var v any
	if err := expanded.Decode(&v); err != nil {
		return d.errorf(path, n.Line, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return d.errorf(path, n.Line, "cannot be written as JSON: %v", err)
	}
	*out = b
	return nil
}

// expandTree returns a copy of n with ${VAR} expanded in every scalar
// value. Keys are left alone, as everywhere in the file.
func (d *decoder) expandTree(n *yaml.Node, path string) (*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return d.scalar(n, path, "")
	case yaml.MappingNode, yaml.SequenceNode:
		c := *n
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, child := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				c.Content[i] = child
				continue
			}
			p := path + "[" + strconv.Itoa(i) + "]"
			if n.Kind == yaml.MappingNode {
				p = join(path, n.Content[i-1].Value)
			}
			var err error
			if c.Content[i], err = d.expandTree(child, p); err != nil {
				return nil, err
			}
		}
		return &c, nil
	}
	return n, nil
}

type entry struct{ key, value *yaml.Node }

// entries lists a mapping's pairs in order, rejecting a repeated key. A
// YAML merge key (<<: *shared) brings in the pairs of the mappings it
// names, as yaml.v3 does: the mapping's own keys win over merged ones,
// and an earlier merged mapping wins over a later one.
func (d *decoder) entries(n *yaml.Node, path string) ([]entry, error) {
	var own, merged []entry
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			sources := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				sources = v.Content
			}
			for _, src := range sources {
				if src.Kind == yaml.AliasNode {
					src = src.Alias
				}
				if src.Kind != yaml.MappingNode {
					return nil, d.errorf(join(path, "<<"), k.Line, "want a mapping or a list of mappings to merge")
				}
				sub, err := d.entries(src, path)
				if err != nil {
					return nil, err
				}
				merged = append(merged, sub...)
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, d.errorf(path, k.Line, "keys must be plain names, got %s", kindName(k))
		}
		if first, dup := seen[k.Value]; dup {
			return nil, d.errorf(join(path, k.Value), k.Line, "key repeated (first set at line %d)", first)
		}
		seen[k.Value] = k.Line
		own = append(own, entry{k, v})
	}
	for _, e := range merged {
		if _, ok := seen[e.key.Value]; !ok {
			seen[e.key.Value] = e.key.Line
			own = append(own, e)
		}
	}
	return own, nil
}

// scalar returns n with ${VAR} expanded in its value; want names the
// expected value for the error when n is not a scalar.
func (d *decoder) scalar(n *yaml.Node, path, want string) (*yaml.Node, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, d.errorf(path, n.Line, "want %s, got %s", want, kindName(n))
	}
	v, err := expand(n.Value)
	var unset *unsetError
	if errors.As(err, &unset) && secretPath(path) {
		d.unresolved[path] = d.wrap(path, n.Line, err)
		c := *n
		c.Value, c.Tag = "", "!!str"
		return &c, nil
	}
	if err != nil {
		return nil, d.wrap(path, n.Line, err)
	}
	if v == n.Value {
		return n, nil
	}
	c := *n
	c.Value = v
	if c.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		// The parser typed the plain "${VAR}" as a string; type the
		// expanded value as if it had been written there. It is still one
		// scalar, whatever it holds.
		c.Tag = ""
		if c.ShortTag() == "!!null" {
			// An empty variable is an empty string, not an absent key.
			c.Tag = "!!str"
		}
	}
	return &c, nil
}

// retyped returns the expanded scalar s of n ready to decode into a
// number or a boolean. Inside {...} and [...] YAML needs ${VAR} quoted,
// which types it as a string; what it expands to is still read as the
// key's type, so concurrency: "${WORKERS}" works there.
func retyped(n, s *yaml.Node) *yaml.Node {
	if s == n {
		return n // nothing was expanded: the file's own typing stands
	}
	c := *s
	c.Tag, c.Style = "", 0
	return &c
}

// expand replaces ${VAR} and ${VAR:-default} in s from the environment.
func expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1] + "${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q: want ${NAME} or ${NAME:-default}, or $${ for a literal ${", s[i:])
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !isEnvName(name) {
			return "", fmt.Errorf("bad reference ${%s}: want ${NAME} or ${NAME:-default}", ref)
		}
		val, set := os.LookupEnv(name)
		switch {
		case val == "" && hasDef:
			val = def
		case !set:
			return "", &unsetError{name: name}
		}
		b.WriteString(val)
		s = s[i+end+1:]
	}
}

// unsetError is a reference to an unset variable without a default.
type unsetError struct{ name string }

func (e *unsetError) Error() string {
	return fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to make it optional)", e.name, e.name)
}

func isEnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// argvHint suggests the list form of a command written as a string: its
// words, or sh -c when it uses shell syntax the words would lose.
func argvHint(s string) string {
	words := strings.Fields(s)
	if strings.ContainsAny(s, "|&;<>()$`\\\"'*?[]#~") {
		words = []string{"sh", "-c", s}
	}
	if len(words) == 0 {
		return `["php", "think", "report:build"]`
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = strconv.Quote(w)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// parseRate reads "N/s", "N/m", "N/h" or "N/<duration>".
func parseRate(s string) (Rate, error) {
	bad := fmt.Errorf("invalid rate %q: want jobs per period, such as 5/s, 100/m or 1000/h", s)
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, bad
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 {
		return Rate{}, bad
	}
	per = strings.TrimSpace(per)
	if per == "s" || per == "m" || per == "h" || per == "d" {
		per = "1" + per
	}
	d, err := dur.Parse(per)
	if err != nil || d <= 0 {
		return Rate{}, bad
	}
	return Rate{N: count, Per: d}, nil
}
