"""The labelled mesh simulator: realistic raw tool outputs with injected pathologies, and their labels."""
