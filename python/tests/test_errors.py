import pytest

import leader


def test_unknown_scheme_is_invalid_argument():
    with pytest.raises(leader.InvalidArgument) as e:
        leader.Elector("nope://x")
    assert e.value.status == 4 and e.value.code == "invalid_argument"
    assert "nope" in str(e.value)
    assert isinstance(e.value, leader.LeaderError) and isinstance(e.value, ValueError)


def test_bad_lock_name_is_invalid_argument(tmp_path):
    e = leader.Elector(f"sqlite://{tmp_path}/x.db", wait=0)
    with pytest.raises(leader.InvalidArgument):
        with e.lead(""):
            pass


def test_bad_option_is_invalid_argument():
    with pytest.raises(leader.InvalidArgument):
        leader.Elector("memory:", lease=-1.0)
    with pytest.raises(leader.InvalidArgument):
        leader.Elector("memory:", on_backend_error="ignore")


def test_unreachable_store_is_unavailable():
    e = leader.Elector("redis://127.0.0.1:1/0", wait=0, lease=5.0, call_timeout=1.0)
    with pytest.raises(leader.Unavailable) as err:
        with e.lead("x"):
            pass
    assert err.value.status == 5


def test_skip_on_backend_error_is_not_elected():
    e = leader.Elector("redis://127.0.0.1:1/0", wait=0, lease=5.0, on_backend_error="skip")
    with e.lead("x") as ctx:
        assert not ctx


def test_closed_elector_is_bad_state():
    e = leader.Elector("memory:")
    e.close()
    with pytest.raises(leader.BadState):
        e.lead("x").__enter__()


def test_campaign_without_auto_extend_is_refused():
    e = leader.Elector("memory:", auto_extend=False)
    with pytest.raises(leader.LeaderError):
        leader.Campaign(e, "x").start()
