"""matplotlib, loaded on demand: the Agg backend and PNG output shared by every figure of jaxid
(the report's, the excitation preview's), so that modules of any layer can draw without importing
the report."""

from __future__ import annotations

import io
from typing import Any

INSTALL_HINT = "pip install 'jaxid[report]'"


def pyplot() -> Any:
    """matplotlib.pyplot on the non-interactive Agg backend, or an ImportError whose one-line
    message names the extra to install."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"figures and reports need matplotlib: {INSTALL_HINT}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: Any = None) -> bytes:
    """PNG bytes of a matplotlib figure (closed), also written to ``path`` when given."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    pyplot().close(fig)
    data = buf.getvalue()
    if path is not None:
        from jaxid.atomic import atomic_write

        with atomic_write(path, "wb") as fh:
            fh.write(data)
    return data
