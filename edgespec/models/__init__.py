"""Model names, loading (torch imported lazily) and the trimmed-vocabulary draft."""
