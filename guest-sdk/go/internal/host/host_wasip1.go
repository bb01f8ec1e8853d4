//go:build wasip1

package host

import "wasmop.dev/guest/internal/wit"

func init() {
	imports = wit.Host{}
}
