// Command rpc-controller drives Pi's RPC mode the way an editor would, with
// pi-otel rpc in between: it sends one prompt, prints what comes back until
// the run settles, asks for the session state and ends the session.
//
//	go run ./examples/rpc-controller -prompt "Say hello" -- pi-otel rpc -- pi --mode rpc --no-session
//
// pi-otel rpc is transparent: drop it from the command line and the
// controller sees the same records.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	prompt := flag.String("prompt", "Say hello", "the prompt to send")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: rpc-controller [-prompt TEXT] -- pi-otel rpc -- pi --mode rpc ...")
		os.Exit(2)
	}
	if err := run(flag.Args(), *prompt, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rpc-controller:", err)
		os.Exit(1)
	}
}

// record is the part of Pi's RPC records this controller reads.
type record struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Command string `json:"command"`
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Data    struct {
		SessionID string `json:"sessionId"`
	} `json:"data"`
}

func run(argv []string, prompt string, out io.Writer) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	send := func(v map[string]string) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = stdin.Write(append(b, '\n')) // one command a line
		return err
	}
	if err := send(map[string]string{"id": "p1", "type": "prompt", "message": prompt}); err != nil {
		return err
	}
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var rec record
			if json.Unmarshal(line, &rec) != nil {
				continue // not a record: Pi may log other lines
			}
			switch {
			case rec.Type == "response" && !rec.Success:
				fmt.Fprintf(out, "%s failed: %s\n", rec.Command, rec.Error)
			case rec.Type == "response" && rec.ID == "s1":
				// The answer to get_state: we are done; closing stdin ends Pi.
				fmt.Fprintf(out, "session %s\n", rec.Data.SessionID)
				if err := stdin.Close(); err != nil {
					return err
				}
			case rec.Type == "response":
				fmt.Fprintf(out, "%s ok\n", rec.Command)
			case rec.Type == "agent_settled":
				fmt.Fprintln(out, rec.Type)
				if err := send(map[string]string{"id": "s1", "type": "get_state"}); err != nil {
					return err
				}
			case rec.Type != "message_update":
				fmt.Fprintln(out, rec.Type)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	return cmd.Wait()
}
