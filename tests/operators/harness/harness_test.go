package harness

import "testing"

func TestHostConfigQuotesThePluginAndOrdersTheEnvironment(t *testing.T) {
	got := hostConfig("/tmp/a b.wasm", map[string]string{"Z": "1", "A": "x: y"})
	want := "plugins:\n- file: \"/tmp/a b.wasm\"\n  env:\n  - {name: \"A\", value: \"x: y\"}\n  - {name: \"Z\", value: \"1\"}\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := hostConfig("p.wasm", nil); got != "plugins:\n- file: \"p.wasm\"\n" {
		t.Fatalf("without an environment: %q", got)
	}
}
