// dpharness is the kubelet side of the device plugin protocol for gpusched's end-to-end
// test, built from the upstream API package k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1
// and google.golang.org/grpc: it serves Registration on DIR/kubelet.sock as the kubelet
// does, and on each Register dials the plugin's socket, asks its options and opens
// ListAndWatch. Commands on stdin drive it; every observation is a JSON line on stdout:
//
//	allocate RESOURCE ID[,ID...]          -> {"event":"allocate",...}
//	preferred RESOURCE SIZE ID[,ID...]    -> {"event":"preferred",...}
//	restart                               kubelet restart: stop, remove every socket in DIR,
//	                                      serve a new kubelet.sock
//	quit
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

var (
	dir     string
	outMu   sync.Mutex
	clients sync.Map // resource -> pluginapi.DevicePluginClient
)

func emit(v map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

type registration struct {
	pluginapi.UnimplementedRegistrationServer
}

func (registration) Register(ctx context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if r.Version != pluginapi.Version {
		return nil, fmt.Errorf("unsupported version %q", r.Version)
	}
	emit(map[string]any{"event": "registered", "resource": r.ResourceName, "endpoint": r.Endpoint,
		"version": r.Version, "preferred": r.Options.GetGetPreferredAllocationAvailable()})
	go connect(r.ResourceName, filepath.Join(dir, r.Endpoint))
	return &pluginapi.Empty{}, nil
}

func connect(resource, sock string) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		emit(map[string]any{"event": "error", "resource": resource, "error": err.Error()})
		return
	}
	c := pluginapi.NewDevicePluginClient(conn)
	clients.Store(resource, c)
	ctx := context.Background()
	opts, err := c.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		emit(map[string]any{"event": "error", "resource": resource, "error": err.Error()})
		return
	}
	emit(map[string]any{"event": "options", "resource": resource,
		"preferred": opts.GetPreferredAllocationAvailable})
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		emit(map[string]any{"event": "error", "resource": resource, "error": err.Error()})
		return
	}
	for {
		r, err := stream.Recv()
		if err != nil {
			emit(map[string]any{"event": "stream-closed", "resource": resource})
			return
		}
		var devs []map[string]string
		for _, d := range r.Devices {
			devs = append(devs, map[string]string{"id": d.ID, "health": d.Health})
		}
		emit(map[string]any{"event": "devices", "resource": resource, "devices": devs})
	}
}

func client(resource string) pluginapi.DevicePluginClient {
	if c, ok := clients.Load(resource); ok {
		return c.(pluginapi.DevicePluginClient)
	}
	return nil
}

func serve() *grpc.Server {
	sock := filepath.Join(dir, "kubelet.sock")
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		emit(map[string]any{"event": "error", "error": err.Error()})
		os.Exit(1)
	}
	s := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(s, registration{})
	go s.Serve(l)
	return s
}

func main() {
	dir = os.Args[1]
	s := serve()
	emit(map[string]any{"event": "ready"})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		switch f[0] {
		case "allocate":
			c := client(f[1])
			if c == nil {
				emit(map[string]any{"event": "error", "error": "no plugin for " + f[1]})
				break
			}
			r, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
				{DevicesIds: strings.Split(f[2], ",")}}})
			if err != nil {
				emit(map[string]any{"event": "allocate", "resource": f[1], "error": err.Error()})
				break
			}
			cr := r.ContainerResponses[0]
			var mounts []string
			for _, m := range cr.Mounts {
				mounts = append(mounts, m.HostPath+":"+m.ContainerPath)
			}
			emit(map[string]any{"event": "allocate", "resource": f[1], "envs": cr.Envs, "mounts": mounts})
		case "preferred":
			c := client(f[1])
			if c == nil {
				emit(map[string]any{"event": "error", "error": "no plugin for " + f[1]})
				break
			}
			n, _ := strconv.Atoi(f[2])
			r, err := c.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
				{AvailableDeviceIDs: strings.Split(f[3], ","), AllocationSize: int32(n)}}})
			if err != nil {
				emit(map[string]any{"event": "preferred", "resource": f[1], "error": err.Error()})
				break
			}
			emit(map[string]any{"event": "preferred", "resource": f[1], "ids": r.ContainerResponses[0].DeviceIDs})
		case "restart":
			s.Stop()
			socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
			for _, p := range socks {
				os.Remove(p)
			}
			clients = sync.Map{}
			time.Sleep(200 * time.Millisecond)
			s = serve()
			emit(map[string]any{"event": "restarted", "removed": len(socks)})
		case "quit":
			cancel()
			s.Stop()
			return
		}
		cancel()
	}
}
