"""Statistics: percentiles, bounds on rates, intervals on paired differences, agreement."""
