// An extension that injects messages around each prompt, as context and
// memory extensions do. Untyped on purpose (no imports), so that Pi 1.6.0
// and Pi 0.73 both load it, and so that it can pass a field of another type
// than the docs give (display as a string), as untyped extensions do.
const pause = () => new Promise((resolve) => setTimeout(resolve, 25));

export default function (pi: any) {
  let prompts = 0;
  pi.on("before_agent_start", async () => {
    prompts++;
    // Pi 0.73 creates the prompt before this hook and persists it after:
    // these two land between the two (the pause, as an extension that
    // looks something up, makes sure they come later than the prompt).
    await pause();
    pi.sendMessage({ customType: "inject-context", content: `context for prompt ${prompts}`, display: true });
    pi.appendEntry("inject-state", { prompts });
    return { message: { customType: "inject-prompt", content: `note ${prompts}`, display: "collapsed" } };
  });
  pi.on("message_start", async (event: any) => {
    // Pi 1.6.0 creates the prompt after before_agent_start; this entry
    // lands between its creation and its persistence.
    if (event.message?.role === "user") pi.appendEntry("inject-seen", { prompts });
  });
}
