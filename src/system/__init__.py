"""The vocabulary: what users declare (`Template`, `OutputFormat`, requests, retry policy) and what they
get back (`TaskResult`, `TaskError`, the error classes). Imports nothing else of atomtask."""
