// Command kwok builds the kwok fake kubelet for gpusched's end-to-end tests from its pinned
// Go module. Test infrastructure only.
package main

import (
	"context"
	"os"

	"sigs.k8s.io/kwok/pkg/kwok/cmd"
)

func main() {
	ctx := context.Background()
	command := cmd.NewCommand(ctx)
	if err := command.ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}
