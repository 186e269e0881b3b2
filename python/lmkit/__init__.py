"""lmkit: the numbers language-model engineers need, from the same C++ core as the ``lmkit`` command.

Tokenizers with tiktoken's surface (:func:`get_encoding`, :class:`Encoding`) and CS336's (:func:`train_bpe`,
:class:`Tokenizer`); the reports (:func:`flops`, :func:`memory`, :func:`layouts`, :func:`plan`, :func:`calibrate`, :func:`quantize`) as
the dicts their ``--json`` prints (``python -m lmkit`` runs the command itself).
"""

import os as _os

from . import _lmkit

_here = _os.path.dirname(_os.path.abspath(__file__))
# A wheel carries data/ as lmkit/share/lmkit (beside lmkit/bin/lmkit); a build tree's core finds the source tree's.
if _os.path.isdir(_os.path.join(_here, "share", "lmkit")):
    _lmkit._set_data_dir(_os.path.join(_here, "share", "lmkit"))

from ._commands import calibrate, flops, layouts, memory, plan, quantize  # noqa: E402
from ._cs336 import Tokenizer, train_bpe  # noqa: E402
from ._encoding import Encoding, get_encoding, list_encoding_names  # noqa: E402

__version__ = _lmkit.__version__

__all__ = ["Encoding", "Tokenizer", "calibrate", "flops", "get_encoding", "layouts",
           "list_encoding_names", "memory", "plan", "quantize", "train_bpe", "__version__"]
