package summaryline

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		stderr string
		want   Summary
		ok     bool
	}{
		{"pi-otel: 1 trace (4bf92f3577b34da6a3ce929d0e0e4736), 12 spans → otlp grpc 127.0.0.1:4317\n",
			Summary{Line: "pi-otel: 1 trace (4bf92f3577b34da6a3ce929d0e0e4736), 12 spans → otlp grpc 127.0.0.1:4317",
				Traces: 1, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Spans: 12, Dest: "otlp grpc 127.0.0.1:4317"}, true},
		{"noise\npi-otel: 2 traces, 1 span → file x\npi-otel: 3 traces, 9 spans → console (stderr); 2 failed to export\n",
			Summary{Line: "pi-otel: 3 traces, 9 spans → console (stderr); 2 failed to export",
				Traces: 3, Spans: 9, Dest: "console (stderr); 2 failed to export"}, true},
		{"pi-otel: error: no such file\n", Summary{}, false},
	} {
		got, ok := Parse([]byte(c.stderr))
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", c.stderr, got, ok, c.want, c.ok)
		}
	}
	if s, _ := Parse([]byte("pi-otel: 2 traces, 9 spans → otlp; 1 pending\n")); !s.Trouble() {
		t.Error("a ';' after the destination is trouble")
	}
	if s, _ := Parse([]byte("pi-otel: 2 traces, 9 spans → otlp\n")); s.Trouble() {
		t.Error("no trouble reported as trouble")
	}
}
