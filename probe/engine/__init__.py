"""The engine: loads the model, applies the options, serves requests through a decode path
and records what each one cost, in a process of its own under the dashboard."""
