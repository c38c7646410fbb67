package rpctest

import (
	"strings"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
)

// Scenarios are the RPC sessions the rpc tests cover, each named for what
// it exercises.
func Scenarios() []Scenario {
	return []Scenario{
		{
			Name:   "prompt-state",
			Script: []fakemodel.Response{fakemodel.Text("First answer.", 2), fakemodel.Text("Second answer.", 2)},
			Drive: func(d *Driver) {
				d.Call(`{"id":"s0","type":"get_state"}`)
				d.Settle(`{"id":"p1","type":"prompt","message":"First prompt"}`)
				d.Call(`{"id":"s1","type":"get_state"}`)
				d.Settle(`{"id":"p2","type":"prompt","message":"Second prompt"}`)
			},
		},
		{
			Name: "steer-follow-up",
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Bash("call_slow", "sleep 1; echo slept")),
				fakemodel.Text("Steering received.", 2),
				fakemodel.Text("Follow-up handled.", 2),
			},
			Drive: func(d *Driver) {
				d.StartTool(`{"id":"p1","type":"prompt","message":"Run a slow command"}`, "bash")
				d.Call(`{"id":"st1","type":"steer","message":"Also mention the weather"}`)
				d.Call(`{"id":"fu1","type":"follow_up","message":"Then summarise"}`)
				d.Wait(IsType("agent_settled"))
			},
		},
		{
			Name:     "compact",
			Settings: map[string]any{"compaction": map[string]any{"keepRecentTokens": 50}},
			Summary:  "Summary: two greetings.",
			Script: []fakemodel.Response{
				fakemodel.Text(strings.Repeat("A first answer with some length. ", 20), 3),
				fakemodel.Text("A second answer.", 2),
			},
			Drive: func(d *Driver) {
				d.Settle(`{"id":"p1","type":"prompt","message":"First"}`)
				d.Settle(`{"id":"p2","type":"prompt","message":"Second"}`)
				d.Call(`{"id":"c1","type":"compact"}`)
			},
		},
		{
			Name:   "bash",
			Script: []fakemodel.Response{fakemodel.Text("I saw the bash output.", 2)},
			Drive: func(d *Driver) {
				d.Call(`{"id":"b1","type":"bash","command":"echo one; echo two"}`)
				d.Send(`{"id":"b2","type":"bash","command":"echo started; sleep 20; echo never"}`)
				d.Wait(IsType("bash_execution_update"))
				d.Send(`{"id":"ab1","type":"abort_bash"}`)
				d.Wait(IsResponseID("b2"))
				d.Settle(`{"id":"p1","type":"prompt","message":"What did bash print?"}`)
			},
		},
		{
			Name:      "extension-ui",
			Extension: true,
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Bash("call_one", "echo one")),
				fakemodel.Tools(fakemodel.Bash("call_two", "echo two")),
				fakemodel.Text("One ran, two was blocked.", 2),
			},
			Drive: func(d *Driver) {
				d.Send(`{"id":"p1","type":"prompt","message":"Run two commands"}`)
				d.Answer("confirm", `"confirmed":true`)
				d.Answer("confirm", `"confirmed":false`)
				d.Wait(IsType("agent_settled"))
				d.Send(`{"id":"p2","type":"prompt","message":"/pick"}`)
				d.Answer("select", `"cancelled":true`)
				d.Wait(IsResponseID("p2"))
				d.Call(`{"id":"p3","type":"prompt","message":"/ask"}`)
			},
		},
		{
			Name:      "extension-error",
			Extension: true,
			Env:       []string{"RPCTEST_THROW=1"},
			Script:    []fakemodel.Response{fakemodel.Text("Fine.", 1)},
			Drive: func(d *Driver) {
				d.Settle(`{"id":"p1","type":"prompt","message":"Hello"}`)
				d.Call(`{"id":"p2","type":"prompt","message":"/boom"}`)
			},
		},
		{
			Name:   "abort-mid-tool",
			Script: []fakemodel.Response{fakemodel.Tools(fakemodel.Bash("call_sleep", "sleep 30"))},
			Drive: func(d *Driver) {
				d.StartTool(`{"id":"p1","type":"prompt","message":"Sleep"}`, "bash")
				d.Pause(300 * time.Millisecond)
				d.Call(`{"id":"a1","type":"abort"}`)
			},
		},
		{
			Name: "busy",
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Bash("call_slow", "sleep 1")),
				fakemodel.Text("Done.", 1),
				fakemodel.Text("Queued prompt handled.", 2),
			},
			Drive: func(d *Driver) {
				d.StartTool(`{"id":"p1","type":"prompt","message":"Run a slow command"}`, "bash")
				d.Send(`{"id":"p2","type":"prompt","message":"Interrupting"}`)
				d.Settle(`{"id":"p3","type":"prompt","message":"Afterwards","streamingBehavior":"followUp"}`)
			},
		},
		{
			Name: "malformed",
			Drive: func(d *Driver) {
				// Each line gets exactly one response; wait for it so the
				// transcript's order does not depend on Pi's scheduling.
				for _, line := range []string{
					"this is not json",
					"[1,2,3]",
					"42",
					`{"id":"x1"}`,
					`{"id":"x2","type":"no_such_command"}`,
					`{"id":"p0","type":"prompt"}`,
				} {
					m := d.C.Mark()
					d.Send(line)
					if d.err == nil {
						_, d.cur, d.err = d.C.WaitAfter(m, d.Timeout, IsType("response"))
					}
				}
				d.SendRaw([]byte("{\"id\":\"crlf\",\"type\":\"get_state\"}\r\n"))
				d.Wait(IsResponseID("crlf"))
				d.Call("{\"id\":\"sep\u2028\u2029\",\"type\":\"get_state\"}")
				d.Send(`{"type":"get_state"}`)
				d.Wait(IsResponse("get_state"))
			},
		},
		{
			Name:   "eof-mid-run",
			Script: []fakemodel.Response{fakemodel.Tools(fakemodel.Bash("call_sleep", "sleep 30"))},
			Drive: func(d *Driver) {
				d.StartTool(`{"id":"p1","type":"prompt","message":"Sleep"}`, "bash")
				d.CloseStdin()
			},
		},
		{
			Name:   "sigterm-mid-tool",
			Script: []fakemodel.Response{fakemodel.Tools(fakemodel.Bash("call_sleep", "sleep 30"))},
			Exit:   143,
			Drive: func(d *Driver) {
				d.StartTool(`{"id":"p1","type":"prompt","message":"Sleep"}`, "bash")
				d.Wait(IsType("tool_execution_update"))
				d.Signal(syscall.SIGTERM)
				d.Wait(func(Line) bool { return false }) // until stdout ends
				if d.err == ErrEOF {
					d.err = nil
				}
			},
		},
	}
}

// ByName returns the scenario called name.
func ByName(name string) (Scenario, bool) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}
