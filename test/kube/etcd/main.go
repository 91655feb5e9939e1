// etcd for the Kubernetes API server the tests run, built from go.etcd.io/etcd/server/v3 (its
// cmd module has replace directives, so it cannot be `go install`ed by version): the same main.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
