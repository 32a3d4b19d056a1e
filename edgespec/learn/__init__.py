"""Learning tools: distillation of draft models, trace capture from real model pairs."""
