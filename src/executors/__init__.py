"""Running one task: `AtomicTaskExecutor` validates inputs, renders prompts and hands one request to the
handler; it turns every outcome into a `TaskResult`."""
