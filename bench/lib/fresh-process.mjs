// Entry of a fresh benchmark process: runs one exported function sent over IPC and sends back its result.
process.once('message', async ({ moduleUrl, fnName, arg }) => {
  try {
    const module = await import(moduleUrl);
    const value = await module[fnName](arg);
    process.send({ ok: true, value }, () => process.disconnect());
  } catch (error) {
    process.send({ ok: false, error: error instanceof Error ? error.stack ?? error.message : String(error) }, () =>
      process.disconnect(),
    );
  }
});
