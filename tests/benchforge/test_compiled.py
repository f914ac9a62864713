"""A hot query compiled once per shape (benchforge.compiled), as get_benchmark_for uses it: the same
answers as the queryset it was compiled from, for every role, and never a stale membership."""

import pytest
from django.http import Http404

from benchforge.compiled import Compiled
from benchforge.roles import set_role
from curation.models import Benchmark
from curation.selectors import benchmarks_for, get_benchmark_for

pytestmark = pytest.mark.django_db


def test_a_benchmark_is_found_for_exactly_the_people_the_queryset_finds_it_for(benchmark, private_benchmark, make_user):
    people = [
        make_user("annotator", benchmarks=[benchmark]),
        make_user("reviewer", benchmarks=[benchmark, private_benchmark]),
        make_user("annotator", benchmarks=[private_benchmark]),
        make_user("researcher"),  # sees every benchmark without being a member
    ]
    nobody = make_user("annotator", benchmarks=[benchmark])
    nobody.groups.clear()  # no role: sees nothing
    nobody = type(nobody).objects.get(pk=nobody.pk)
    for user in [*people, nobody]:
        for slug in (benchmark.slug, private_benchmark.slug, "no-such-benchmark"):
            expected = benchmarks_for(user).filter(slug=slug).first()
            if expected is None:
                with pytest.raises(Http404):
                    get_benchmark_for(user, slug)
            else:
                found = get_benchmark_for(user, slug)
                assert found == expected and found.name == expected.name and found.language == expected.language


def test_a_member_removed_or_a_role_changed_counts_on_the_next_request(benchmark, make_user):
    member = make_user("annotator", benchmarks=[benchmark])
    assert get_benchmark_for(member, benchmark.slug) == benchmark  # compiled for annotators now
    benchmark.members.remove(member)
    with pytest.raises(Http404):
        get_benchmark_for(member, benchmark.slug)
    set_role(member, "researcher")
    assert get_benchmark_for(member, benchmark.slug) == benchmark


def test_each_shape_is_compiled_once_and_run_with_each_requests_values(benchmark, private_benchmark):
    built = []

    def build(shape, *, slug):
        built.append(shape)
        return Benchmark.objects.filter(slug=slug, is_external=shape == "external")

    by_slug = Compiled(build, slug="\x00slug\x00")
    assert [b.slug for b in by_slug.rows("own", slug=benchmark.slug)] == [benchmark.slug]
    assert [b.slug for b in by_slug.rows("own", slug=private_benchmark.slug)] == [private_benchmark.slug]
    assert list(by_slug.rows("external", slug=benchmark.slug)) == []
    assert built == ["own", "external"]
