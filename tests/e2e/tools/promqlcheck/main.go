// Command promqlcheck parses PromQL expressions with Prometheus' own parser
// (github.com/prometheus/prometheus/promql/parser) for gpusched's chart tests: one expression
// per input line (a JSON string), one output line per expression, a JSON object with the
// metric names its vector and matrix selectors name, or the parser's error. Exits 1 when any
// expression does not parse. Test infrastructure only; nothing here ships.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Expr    string   `json:"expr"`
	Metrics []string `json:"metrics,omitempty"`
	Error   string   `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	bad := false
	p := parser.NewParser(parser.Options{})
	for in.Scan() {
		var expr string
		if err := json.Unmarshal(in.Bytes(), &expr); err != nil {
			fmt.Fprintf(os.Stderr, "promqlcheck: a line is not a JSON string: %v\n", err)
			os.Exit(2)
		}
		r := result{Expr: expr}
		e, err := p.ParseExpr(expr)
		if err != nil {
			r.Error = err.Error()
			bad = true
		} else {
			seen := map[string]bool{}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					name := vs.Name
					for _, m := range vs.LabelMatchers {
						if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
							name = m.Value
						}
					}
					if name != "" {
						seen[name] = true
					}
				}
				return nil
			})
			for n := range seen {
				r.Metrics = append(r.Metrics, n)
			}
			sort.Strings(r.Metrics)
		}
		if err := out.Encode(r); err != nil {
			os.Exit(2)
		}
	}
	if bad {
		os.Exit(1)
	}
}
