"""Dev use: reading `nsys stats --format csv` reports (dev/nsys_queue.py, dev/nsys_gaps.py)."""


def column(header, *words):
    """The index of the first column whose name contains every word (nsys versions name them
    differently)."""
    for i, h in enumerate(header):
        if all(w.lower() in h.lower() for w in words):
            return i
    raise SystemExit(f"no column with {words} in {header}")
