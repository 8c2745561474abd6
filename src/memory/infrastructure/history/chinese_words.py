"""Dictionary words of Chinese queries, from jieba (MIT; its dictionary ships in the package).

Used for queries only (docs/adr/0050): the stored index is made of bigrams, which need no
dictionary. Loading the dictionary takes ~0.5-3 s and ~80 MB once per process, so it is
loaded once, in the background when the history context starts.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

log = logging.getLogger(__name__)


class JiebaWords:
    """A `WordSplitter`: jieba's precise mode, one tokenizer for the whole process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokenizer: Any = None

    def _loaded(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)  # its start-up chatter is debug level
                tokenizer = jieba.Tokenizer()
                tokenizer.initialize()
                self._tokenizer = tokenizer
            return self._tokenizer

    def load(self) -> None:
        """Load the dictionary now, in this thread (the service's warm-up before it says it
        is ready, docs/adr/0113)."""
        self._loaded()

    def warm_up(self) -> None:
        """Load the dictionary in a background thread, so the first Chinese query does not
        wait for it."""
        if self._tokenizer is not None:
            return
        threading.Thread(target=self._loaded, name="jieba-dictionary", daemon=True).start()

    def __call__(self, run: str) -> list[str]:
        return [str(word) for word in self._loaded().cut(run, HMM=True)]


@functools.cache
def jieba_words() -> JiebaWords:
    return JiebaWords()
