"""Everything in ``schedlog.runtime.__all__`` imports."""

import schedlog.runtime


def test_all_names_import_and_are_sorted() -> None:
    names = schedlog.runtime.__all__
    for name in names:
        assert getattr(schedlog.runtime, name) is not None
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))
