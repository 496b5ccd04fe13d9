"""What tokens cost: pydantic's maintained price table (``genai-prices``), or a ``[pricing."model"]`` override."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from chatgate.config import PriceConfig
from chatgate.usage.tokens import RunUsage

__all__ = ["Pricing"]

logger = logging.getLogger("chatgate.usage")

_PRICED_KINDS = frozenset({"openai", "anthropic"})
"""Provider kinds whose models the table prices; an Ollama model is the operator's own hardware."""
_RATE_TOKENS = 1000
"""The usage a model's per-token rates are priced from (small: a tiered price's first tier)."""


class Pricing:
    """Prices model calls. An override is looked up by ``provider:model`` first, then by the model name."""

    def __init__(self, overrides: Mapping[str, PriceConfig]) -> None:
        self._overrides = dict(overrides)
        self._unpriced: set[str] = set()
        self._rates: dict[str, tuple[float, float] | None] = {}

    def rates(self, model: str, kind: str | None) -> tuple[float, float] | None:
        """US dollars per input and per output token of ``model`` (None: no price), priced once and kept.

        For estimates (a call's reservation): a table lookup costs milliseconds, this a dictionary's.
        """
        if model not in self._rates:
            per_input = self.cost(model, kind, RunUsage(calls=1, input_tokens=_RATE_TOKENS))
            per_output = self.cost(model, kind, RunUsage(calls=1, output_tokens=_RATE_TOKENS))
            if per_input is None or per_output is None:
                self._rates[model] = None
            else:
                self._rates[model] = (per_input / _RATE_TOKENS, per_output / _RATE_TOKENS)
        return self._rates[model]

    def cost(self, model: str, kind: str | None, usage: RunUsage) -> float | None:
        """The cost in US dollars of ``usage`` on ``model`` (``provider:model``); None when it has no price."""
        if not usage.reported:
            return None
        name = model.split(":", 1)[1]
        override = self._overrides.get(model) or self._overrides.get(name)
        cached = usage.cached_input_tokens or 0
        if override is not None:
            cached_price = override.cached_input_usd_per_mtok
            if cached_price is None:
                cached_price = override.input_usd_per_mtok
            dollars = (
                (usage.input_tokens - cached) * override.input_usd_per_mtok
                + cached * cached_price
                + usage.output_tokens * override.output_usd_per_mtok
            )
            return dollars / 1_000_000
        if kind not in _PRICED_KINDS or model in self._unpriced:
            return None
        try:
            tokens = PriceUsage(
                input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cache_read_tokens=cached
            )
            price = calc_price(
                tokens,
                model_ref=name,
                provider_id=kind,
            )
        except LookupError:  # remembered: the table is not searched again for this model
            self._unpriced.add(model)
            logger.warning('no price known for %s: add a [pricing."%s"] table to count its cost', model, name)
            return None
        except Exception:  # a table entry this version cannot apply: no cost, never a failed run
            self._unpriced.add(model)
            logger.exception("pricing %s failed; its runs are recorded without a cost", model)
            return None
        return float(price.total_price)
