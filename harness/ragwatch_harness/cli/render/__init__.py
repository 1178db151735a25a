"""What the harness's commands print: the demo's closing screen."""
