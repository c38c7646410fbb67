package proc

import (
	"io"
	"os/exec"
	"testing"
)

func TestStartPiped(t *testing.T) {
	cmd := exec.Command("sh", "-c", `read x; echo "out $x"; echo "err $x" >&2`)
	p := StartPiped(t, cmd, Stdin|Stdout|Stderr)
	if _, err := io.WriteString(p.Stdin, "hi\n"); err != nil {
		t.Fatal(err)
	}
	p.Stdin.Close()
	out, _ := io.ReadAll(p.Stdout)
	errOut, _ := io.ReadAll(p.Stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if string(out) != "out hi\n" || string(errOut) != "err hi\n" {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}

	cmd = exec.Command("sh", "-c", "echo only")
	p = StartPiped(t, cmd, Stdout)
	if p.Stdin != nil || p.Stderr != nil {
		t.Error("pipes made that were not asked for")
	}
	out, _ = io.ReadAll(p.Stdout)
	_ = cmd.Wait()
	if string(out) != "only\n" {
		t.Errorf("stdout %q", out)
	}
}
