"""The base every stage builds on: settings, the data workspace and its versioning, record schemas,
files, text and language, checked inputs, validation, batching, and the check of what mapped tasks
hand over."""
