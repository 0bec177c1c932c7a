// Command etcd builds the etcd server for gpusched's end-to-end tests from its pinned Go
// module. Test infrastructure only.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
