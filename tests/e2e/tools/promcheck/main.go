// promcheck parses Prometheus text exposition from stdin with the upstream parser
// (github.com/prometheus/common/expfmt, legacy name validation) and fails on any error. It
// prints one line per series: name, then label=value pairs sorted, then the value, for the
// test to grep. Built by tests/e2e/build-control-plane.sh into the test cache.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func main() {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promcheck:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	series := 0
	for _, n := range names {
		for _, m := range fams[n].GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			v := 0.0
			switch {
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				v = m.GetUntyped().GetValue()
			}
			fmt.Printf("%s %s %g\n", n, strings.Join(ls, ","), v)
			series++
		}
	}
	fmt.Fprintf(os.Stderr, "promcheck: %d families, %d series\n", len(fams), series)
}
