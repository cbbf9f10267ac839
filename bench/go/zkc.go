package main

/*
#cgo CFLAGS: -DTHREADED
#cgo LDFLAGS: -lzookeeper_mt
#include <stdlib.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

// zkc_open connects and waits for the session (up to 5 s); NULL on failure.
static zhandle_t* zkc_open(const char* servers) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  zhandle_t* zh = zookeeper_init(servers, NULL, 10000, NULL, NULL, 0);
  for (int i = 0; zh && i < 500 && zoo_state(zh) != ZOO_CONNECTED_STATE; ++i) usleep(10000);
  if (zh && zoo_state(zh) != ZOO_CONNECTED_STATE) {
    zookeeper_close(zh);
    return NULL;
  }
  return zh;
}

// zkc_cycle: one ephemeral-sequential create and its delete, synchronous.
static int zkc_cycle(zhandle_t* zh, const char* prefix) {
  char path[512];
  int rc = zoo_create(zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                      path, sizeof path);
  if (rc != ZOK) return rc;
  return zoo_delete(zh, path, -1);
}

static int zkc_mkdir(zhandle_t* zh, const char* path) {
  int rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  return rc == ZNODEEXISTS ? ZOK : rc;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// zkCCreateDelete: the same two writes as zkCreateDelete over the ZooKeeper C client
// (libzookeeper_mt, synchronous API): the client library our ZooKeeper store is built on.
func zkCCreateDelete(row, servers string, d time.Duration, path string) {
	cs := C.CString(servers)
	defer C.free(unsafe.Pointer(cs))
	zh := C.zkc_open(cs)
	if zh == nil {
		must(fmt.Errorf("zookeeper_init %s: no session", servers))
	}
	defer C.zookeeper_close(zh)
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	if rc := C.zkc_mkdir(zh, cp); rc != C.ZOK {
		must(fmt.Errorf("create %s: %d", path, int(rc)))
	}
	prefix := C.CString(path + "/n-")
	defer C.free(unsafe.Pointer(prefix))
	measure(row, d, func() error {
		if rc := C.zkc_cycle(zh, prefix); rc != C.ZOK {
			return fmt.Errorf("zookeeper C client create + delete: %d", int(rc))
		}
		return nil
	})
}
