// celcheck gives upstream's verdict on DRA device selectors: each case of a corpus (a device
// and a CEL expression) judged by k8s.io/dynamic-resource-allocation v0.37.2's cel package
// the way a v1.37.2 cluster judges a claim's selector, in two steps:
//
//  1. the API server's validation of a new ResourceClaim or DeviceClass
//     (pkg/apis/resource/validation validateCELExpression): the expression compiled in the
//     NewExpressions environment with the feature gates at their v1.37 defaults
//     (DRAConsumableCapacity on, DRAListTypeAttributes off), refused when it is longer than
//     CELSelectorExpressionMaxLength, does not compile, or its estimated worst-case cost
//     exceeds CELSelectorExpressionMaxCost;
//  2. kube-scheduler's allocator: the expression compiled as cel.Cache.GetOrCompile does
//     (StoredExpressions, no cost estimate) and run on the device with DeviceMatches under
//     the runtime cost limit CELSelectorExpressionMaxCost.
//
//	celcheck CORPUS
//
// CORPUS is text, one item a line: blank lines and lines starting with '#' are skipped;
// "device NAME JSON" defines a device, JSON being a resource.k8s.io/v1 Device with one more
// key, "driver" (the driver of its ResourceSlice); any other line is "NAME EXPRESSION", a case:
// the expression (the rest of the line, trimmed) on the device NAME, or "!NAME EXPRESSION"
// (a case gpusched refuses by design, judged the same here). For each case one line
// is printed: its line number, the verdict and, after a tab, upstream's message:
//
//	true      the selector selects the device
//	false     it does not
//	compile   refused at validation or compile time
//	cost      refused for its cost (estimated at validation, or the runtime limit)
//	runtime   a runtime error (the allocation fails)
//
// The exit status is 2 on a malformed corpus, 0 otherwise.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type device struct {
	Driver string `json:"driver"`
	resourceapi.Device
}

var features = dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: false}

func verdict(cache *dracel.Cache, expr string, d *device) (string, string) {
	if len(expr) > resourceapi.CELSelectorExpressionMaxLength {
		return "compile", fmt.Sprintf("longer than %d bytes", resourceapi.CELSelectorExpressionMaxLength)
	}
	envType := environment.NewExpressions
	res := dracel.GetCompiler(features).CompileCELExpression(expr, dracel.Options{EnvType: &envType})
	if res.Error != nil {
		if strings.Contains(res.Error.Detail, "cost estimation failed") {
			return "cost", res.Error.Detail
		}
		return "compile", res.Error.Detail
	}
	if res.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		return "cost", fmt.Sprintf("too complex, exceeds cost limit (estimated %d)", res.MaxCost)
	}
	prog := cache.GetOrCompile(expr)
	if prog.Error != nil {
		return "compile", prog.Error.Detail
	}
	ok, _, err := prog.DeviceMatches(context.Background(), dracel.Device{
		Driver:                   d.Driver,
		AllowMultipleAllocations: d.AllowMultipleAllocations,
		Attributes:               d.Attributes,
		Capacity:                 d.Capacity,
	})
	if err != nil {
		msg := dracel.EnhanceRuntimeError(err).Error()
		if strings.Contains(msg, "cost limit exceeded") {
			return "cost", msg
		}
		return "runtime", msg
	}
	return fmt.Sprint(ok), ""
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: celcheck CORPUS")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	cache := dracel.NewCache(10, features)
	devices := map[string]*device{}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// "!NAME EXPRESSION": a case gpusched refuses by design; upstream judges it all the same
		name, rest, _ := strings.Cut(strings.TrimPrefix(text, "!"), " ")
		rest = strings.TrimSpace(rest)
		if name == "device" {
			dn, js, _ := strings.Cut(rest, " ")
			d := &device{}
			if err := json.Unmarshal([]byte(js), d); err != nil {
				fmt.Fprintf(os.Stderr, "%s:%d: device %s: %v\n", os.Args[1], line, dn, err)
				os.Exit(2)
			}
			devices[dn] = d
			continue
		}
		d := devices[name]
		if d == nil {
			fmt.Fprintf(os.Stderr, "%s:%d: unknown device %q\n", os.Args[1], line, name)
			os.Exit(2)
		}
		v, msg := verdict(cache, rest, d)
		msg = strings.ReplaceAll(msg, "\n", " ")
		fmt.Fprintf(out, "%d %s\t%s\n", line, v, msg)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
