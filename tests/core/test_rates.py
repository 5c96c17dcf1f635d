"""models.motion.rates: the "[PATTERN=]RATE" rules that give source files their frame rate."""
import pytest

from models.core.errors import SmplIkError
from models.motion.rates import RateRule, given_fps, parse_rate_rule, rate_rules


def test_a_rule_is_a_rate_for_every_file_or_a_pattern_and_its_rate():
    assert parse_rate_rule("60") == RateRule("*", 60.0)
    assert parse_rate_rule(" salsa_*=59.94 ") == RateRule("salsa_*", 59.94)
    assert parse_rate_rule("take=2=30") == RateRule("take=2", 30.0)     # the rate follows the last '='


def test_the_first_rule_that_matches_the_files_name_gives_its_rate():
    rules = rate_rules(["salsa_*=60", RateRule("*", 120.0), "salsa_01*=30"])
    assert given_fps(rules, "aclstm/salsa_01.bvh") == 60.0
    assert given_fps(rules, "aclstm/martial_03.bvh") == 120.0
    assert given_fps(rate_rules(["salsa_*=60"]), "salsa/martial_03.bvh") == 0.0   # the name, not the folder
    assert given_fps(rate_rules(["salsa_*=60"]), "SALSA_01.bvh") == 0.0          # case matters
    assert given_fps(rate_rules(None), "salsa_01.bvh") == 0.0


@pytest.mark.parametrize("text", ["", "sixty", "salsa_*=", "=60", " =60", "0", "-1", "inf", "1e400", "nan"])
def test_a_bad_rule_is_refused_with_its_text(text):
    with pytest.raises(SmplIkError, match=r"^" + repr(text.strip()).replace("*", r"\*")):
        parse_rate_rule(text)
