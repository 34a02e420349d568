// Command chart draws bench/compare.sh's chart: horizontal bars in groups,
// as SVG on stdout, from JSON on stdin, with no network and no library.
//
//	{"title": "...", "unit": "jobs/s",
//	 "groups": [{"label": "PostgreSQL, concurrency 100",
//	             "bars": [{"label": "sluice", "value": 49679, "sluice": true}, ...]}]}
//
// Every bar of the chart shares one scale, so that bars of different
// groups compare too; sluice's bars are drawn in a colour of their own.
package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strings"
)

type chart struct {
	Title  string  `json:"title"`
	Unit   string  `json:"unit"`
	Groups []group `json:"groups"`
}

type group struct {
	Label string `json:"label"`
	Bars  []bar  `json:"bars"`
}

type bar struct {
	Label  string  `json:"label"`
	Value  float64 `json:"value"`
	Sluice bool    `json:"sluice"`
}

// Layout, in SVG user units.
const (
	width    = 900
	labelW   = 300 // bar labels, right-aligned before the bars
	valueW   = 90  // room for the figure after the longest bar
	barH     = 18
	barGap   = 4
	groupGap = 14
	headH    = 22 // a group's heading
	titleH   = 40
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var c chart
	if err := json.NewDecoder(in).Decode(&c); err != nil {
		return fmt.Errorf("read the chart's JSON: %w", err)
	}
	_, err := io.WriteString(out, draw(c))
	return err
}

// draw renders the chart; with no bars it says so instead of failing, so
// that a run whose every throughput case failed still gets a chart.
func draw(c chart) string {
	top := 0.0
	rows := 0
	for _, g := range c.Groups {
		for _, b := range g.Bars {
			top = math.Max(top, b.Value)
		}
		rows += len(g.Bars)
	}
	height := titleH + len(c.Groups)*(headH+groupGap) + rows*(barH+barGap) + 10
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&s, `<text x="10" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", esc(c.Title))
	if top <= 0 {
		fmt.Fprintf(&s, `<text x="10" y="%d">no figures</text>`+"\n", titleH+14)
		s.WriteString("</svg>\n")
		return s.String()
	}
	scale := float64(width-labelW-valueW-10) / top
	y := titleH
	for _, g := range c.Groups {
		fmt.Fprintf(&s, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y+15, esc(g.Label))
		y += headH
		for _, b := range g.Bars {
			fill := "#9aa5b1"
			if b.Sluice {
				fill = "#1f6feb"
			}
			w := math.Max(b.Value*scale, 1)
			fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-6, y+13, esc(b.Label))
			fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", labelW, y, w, barH, fill)
			fmt.Fprintf(&s, `<text x="%.1f" y="%d">%s %s</text>`+"\n", float64(labelW)+w+4, y+13, thousands(b.Value), esc(c.Unit))
			y += barH + barGap
		}
		y += groupGap
	}
	s.WriteString("</svg>\n")
	return s.String()
}

func esc(s string) string { return html.EscapeString(s) }

// thousands formats a rounded, non-negative figure with commas, as the
// report's tables do.
func thousands(v float64) string {
	d := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, r := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
