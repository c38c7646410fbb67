// Package launch starts and supervises the Pi child process for `pi-otel run`
// and `pi-otel rpc`, so that running Pi under pi-otel feels like running it
// directly.
//
// # Standard streams and environment
//
// The child's stderr is pi-otel's stderr and, by default, its stdin is
// pi-otel's stdin: the file descriptors themselves are inherited, nothing is
// copied, so `cat log | pi-otel run -- pi -p …` gives Pi the same pipe a
// shell would. [WithStdinPipe] instead gives it a pipe written through
// [Process.Stdin] (RPC mode, where the proxy must see each command). Stdout
// is always a pipe read through [Process.Stdout]; the caller forwards it.
// The environment is pi-otel's plus the entries given to [WithEnv] (for
// example TRACEPARENT), later entries winning.
//
// # Exit status
//
// [Process.Wait] reports the code a shell would show: the child's exit
// code, or 128+N when signal N killed it, with the signal alongside.
// [ExitCodeForStartError] gives 127 for a command that was not found and
// 126 for one that could not be run.
//
// # Signals: the PID, not the process group
//
// The child stays in pi-otel's process group because Pi may use the
// terminal. That group is also pi-otel's own (and, in a pipeline, its
// neighbours'), so [Process.ForwardSignals] signals the child's PID only;
// signalling the group would signal pi-otel itself. Processes Pi starts are
// Pi's to manage, as they would be without pi-otel: Pi 1.6.0 starts its
// bash-tool children detached (in their own session), kills them on SIGTERM
// and SIGHUP, and leaves them running when SIGINT kills it.
//
// Signals the kernel sends to a whole process group reach Pi directly as
// well as through pi-otel, so Pi may get one event twice:
//
//   - Ctrl-C, Ctrl-\ and a terminal resize: in print, JSON and RPC mode
//     the first SIGINT or SIGQUIT kills Pi (130, 131, as when run
//     directly), so the second finds nothing to do; SIGWINCH matters only
//     to its TUI.
//   - A terminal hangup (SIGHUP), or SIGTERM sent to the group (GNU timeout
//     does so; so does systemd's default control-group kill): Pi treats a
//     repeated SIGTERM or SIGHUP as "exit now" and skips the rest of its
//     shutdown after killing its tool processes. The exit code is the same
//     (143, 129). Run directly under timeout, Pi meets the same repeat.
//
// pi-otel cannot tell the two deliveries apart (Go does not expose the
// sender of a signal), and a signal that is never forwarded is worse than a
// repeated one, so every listed signal is forwarded.
//
// The second SIGINT or SIGTERM pi-otel receives means "stop waiting": the
// child is killed with SIGKILL and Wait returns. A copy arriving within
// 250 ms of the first is not a second request: GNU timeout signals its
// child and then the child's group, and a Go process receives both copies
// about a third of the time, microseconds apart.
//
// Forwarding starts after the child has started, so the child inherits the
// signal dispositions pi-otel itself was started with (nohup's ignored
// SIGHUP, say) and decides what a forwarded signal does, as it would if
// signalled directly. Node, and so Pi, resets them at startup anyway.
//
// # Parent death
//
// If pi-otel dies, even by SIGKILL, the kernel sends the child SIGTERM,
// which Pi handles by shutting down. Linux fires it when the thread that
// forked the child exits, so [Start] forks from a goroutine locked to its own OS thread that lives until
// the child is reaped.
//
// # Pumping stdout and supervising
//
// [Process.Pump] runs the caller's copy loop over the child's stdout and
// waits for the child, without waiting for an orphan that still holds the
// pipe once the child has exited. [Process.Supervise] forwards signals and
// keeps a consumer that left (SIGPIPE) from killing the caller, so that it
// can still close and export its trace.
//
// # Platforms
//
// Linux is the target. The package builds on every unix. FreeBSD has the
// parent-death signal too (tied to the process rather than a thread).
// Other systems, macOS included, have none ([ParentDeathSignalSupported] is
// false): a child that outlives pi-otel keeps running, and its next write
// to stdout fails (EPIPE or SIGPIPE, as the child has chosen). Windows is
// not supported: the package has no API there.
package launch
