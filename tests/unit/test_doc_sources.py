"""What the docs site is made from stays right without a build: every target option says
what it means (its `description`, which the generated database page shows)."""

from __future__ import annotations


def test_every_target_option_says_what_it_means():
    from tsbench.databases import names, target_class

    missing = [f"{name}: {field}" for name in names()
               for field, info in target_class(name).options_model.model_fields.items()
               if not (info.description or "").strip()]
    assert not missing, f"target options without a description: {missing}"

