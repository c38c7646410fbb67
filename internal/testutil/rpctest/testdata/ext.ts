// A test extension for RPC scenarios: dialogs around the bash tool, two
// extension commands (a select and a timed input), and a handler that
// throws when RPCTEST_THROW=1.
export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    if (event.toolName !== "bash") return;
    const ok = await ctx.ui.confirm("Run bash?", "The model wants to run a command.");
    ctx.ui.notify(ok ? "allowed" : "blocked", "info");
    if (!ok) return { block: true, reason: "Blocked by user" };
  });
  pi.registerCommand("pick", {
    description: "Pick a colour",
    handler: async (_args: string, ctx: any) => {
      const choice = await ctx.ui.select("Pick a colour", ["red", "blue"]);
      ctx.ui.setStatus("pick", choice ?? "none");
    },
  });
  pi.registerCommand("ask", {
    description: "Ask with a timeout",
    handler: async (_args: string, ctx: any) => {
      const v = await ctx.ui.input("Name?", "type a name", { timeout: 200 });
      ctx.ui.notify(v === undefined ? "no answer" : "answered", "info");
    },
  });
  pi.registerCommand("boom", {
    description: "Fail",
    handler: async () => {
      throw new Error("boom command failed");
    },
  });
  pi.on("turn_end", async () => {
    if (process.env.RPCTEST_THROW === "1") throw new Error("turn_end handler exploded");
  });
}
