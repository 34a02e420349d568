package main

import (
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"
)

// TestDraw checks that the chart is well-formed SVG whose bars share one
// scale, with labels escaped and figures printed.
func TestDraw(t *testing.T) {
	in := `{"title":"Work/s <median>","unit":"jobs/s","groups":[
		{"label":"PostgreSQL, concurrency 100","bars":[{"label":"sluice","value":40000,"sluice":true},{"label":"River & co","value":10000}]},
		{"label":"SQLite, concurrency 100","bars":[{"label":"sluice","value":20000,"sluice":true}]}]}`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	svg := out.String()
	var widths []float64
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "rect" {
			for _, a := range el.Attr {
				if a.Name.Local == "width" && a.Value != "100%" {
					w, err := strconv.ParseFloat(a.Value, 64)
					if err != nil {
						t.Fatal(err)
					}
					widths = append(widths, w)
				}
			}
		}
	}
	if len(widths) != 3 || widths[0] != 4*widths[1] || widths[0] != 2*widths[2] {
		t.Errorf("bar widths %v, want in the ratio 4 : 1 : 2", widths)
	}
	for _, want := range []string{"40,000 jobs/s", "River &amp; co", "Work/s &lt;median&gt;", "#1f6feb"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart has no %q", want)
		}
	}
}

// TestBadInput checks that input that is not the chart's JSON is refused.
func TestBadInput(t *testing.T) {
	if err := run(strings.NewReader("[1, 2]"), io.Discard); err == nil || !strings.Contains(err.Error(), "chart's JSON") {
		t.Errorf("run on an array: %v", err)
	}
}
