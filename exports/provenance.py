"""Where a released item came from, read from the apps that made it (exports reads every app;
nothing imports exports): its images' sources and licenses, its author, its reviewers per round,
the rewrite batch, model and template version that wrote it, the QC runs that judged it, and the
numbers of how the benchmark was built (for the dataset card)."""

from collections import Counter

from curation.selectors import status_counts
from qc import selectors as qc
from review import selectors as reviews
from rewrite import selectors as rewrites


def for_items(items) -> dict[int, dict]:
    """{item id: provenance} for items loaded with annotation.selectors.with_payload_data."""
    ids = [item.pk for item in items]
    verdicts = reviews.verdicts_for_items(ids)
    checked, rewritten = qc.provenance(ids), rewrites.provenance(ids)
    out = {}
    for item in items:
        source = item.seed if item.seed_id else item
        out[item.pk] = {
            "author": item.author.username if item.author_id else None,
            "images": [
                {
                    "sha256": link.image.sha256,
                    "source": link.image.source,
                    "license": link.image.license,
                    "collected_at": link.image.collected_at.date().isoformat() if link.image.collected_at else None,
                }
                for link in source.item_images.all()
            ],
            "reviews": verdicts.get(item.pk, []),
            "rewrite": rewritten.get(item.pk),
            "qc": checked.get(item.pk, {}).get("runs", []),
            "external_id": item.external_id or None,
        }
    return out


def construction(benchmark, items) -> dict:
    """How the benchmark was built, for the dataset card: images collected vs kept, rewrites
    approved per seed, review rounds and what each decided."""
    images = status_counts(benchmark)
    seeds = [i for i in items if i.seed_id is None]
    rewrites = Counter(i.seed_id for i in items if i.seed_id)
    return {
        "images_collected": sum(images.values()),
        "images_accepted": images.get("accepted", 0),
        "images_rejected": images.get("rejected", 0),
        "seeds": len(seeds),
        "rewrites": sum(rewrites.values()),
        "rewrites_per_seed": round(sum(rewrites.values()) / len(seeds), 2) if seeds else 0,
        "review_rounds": reviews.closed_round_outcomes(benchmark),
        "qc_removed": _removals(benchmark),
    }


def _removals(benchmark) -> str:
    """ "N (reason: n, …)" for the card; items a QC decision took out of the benchmark."""
    removed = Counter(row["reason"] for row in qc.removed_items(benchmark=benchmark))
    if not removed:
        return "none"
    return f"{sum(removed.values())} (" + "; ".join(f"{reason}: {n}" for reason, n in sorted(removed.items())) + ")"
