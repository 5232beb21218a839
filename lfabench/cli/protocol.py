"""A dataset's own protocol in the composed config (:class:`lfabench.plugin.DatasetProtocol`).

Two pieces of Hydra composition, both generated from the dataset plugins' declarations:

* the dataset's config node (global, as ``conf/dataset/synthetic.yaml``) carries
  ``defaults: [override /descriptor: <natural>, override /evaluator: <natural>, _self_]``, so ``dataset=oxford5k`` alone composes SIFT and the retrieval
  evaluator; a group named on the command line (``descriptor=daisy``) or by a sweep still wins, as
  command-line choices always do over defaults-list overrides;
* the group :data:`CAPS_GROUP` holds one global node per (dataset, descriptor) cap,
  ``<dataset>_<descriptor>`` = ``{descriptor: {params: {max_keypoints: cap}}}``, selected by the
  primary config's ``optional dataset_descriptor: ${dataset}_${descriptor}`` (Hydra's config
  specialisation); a descriptor without a declared cap matches no node and keeps its own default, and
  ``descriptor.params.max_keypoints=...`` on the command line is applied after composition, so it wins.
"""

from __future__ import annotations

CAPS_GROUP = "dataset_descriptor"


def with_protocol(spec, node: dict) -> tuple[dict, str | None]:
    """``(node, package)`` to store for a plugin's generated config ``node``.

    A dataset whose protocol names a descriptor or an evaluator becomes a global node (as
    ``conf/dataset/synthetic.yaml``: only a global node may override another group) holding
    ``{defaults: [override /descriptor: ..., override /evaluator: ..., _self_], dataset: node}``;
    any other node is returned unchanged, with the group's own package (``None``).
    """
    protocol = getattr(spec, "protocol", None)
    if spec.kind != "dataset" or protocol is None:
        return node, None
    defaults = [{f"override /{kind}": name}
                for kind, name in (("descriptor", protocol.descriptor), ("evaluator", protocol.evaluator)) if name]
    if not defaults:
        return node, None
    return {"defaults": [*defaults, "_self_"], "dataset": node}, "_global_"


def cap_nodes(specs) -> dict[str, dict]:
    """``{"<dataset>_<descriptor>": global node setting the cap}`` for every declared per-image cap."""
    out = {}
    for spec in specs:
        protocol = getattr(spec, "protocol", None)
        for descriptor, cap in (protocol.max_keypoints.items() if protocol else ()):
            out[f"{spec.name}_{descriptor}"] = {"descriptor": {"params": {"max_keypoints": int(cap)}}}
    return out
