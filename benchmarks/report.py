"""Report helpers the benchmarks share: rounding figures for JSON, medians and percentiles."""
import numpy as np


def rounded(value):
    """`value` with every float (also inside dicts and lists) rounded to 3 decimals; a
    non-finite float becomes None (JSON has no NaN). Other values are returned as they are."""
    if isinstance(value, float):
        return round(value, 3) if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def median_and_p90(name, values, digits=2):
    """{name_median, name_p90}: the median and 90th percentile of `values`, rounded to `digits`."""
    return {f"{name}_median": round(float(np.median(values)), digits),
            f"{name}_p90": round(float(np.percentile(values, 90)), digits)}
