"""The answer check of generated tasks: wrong answers the simulator wrote are rejected with their reason, correct
paraphrases are kept, and requests sampled like the seeds are never rejected."""

from __future__ import annotations

import random

import pytest

from genenv.domains.base import Candidate, TaskInstance, ValidationContext
from genenv.domains.tool_call import ToolCallDomain
from genenv.domains.tool_call.calls import Call, parse_calls
from genenv.domains.tool_call.catalog import CATALOG
from genenv.domains.tool_call.grounding import answer_error
from genenv.domains.tool_call.make_seeds import GROUPS, build_seeds
from genenv.domains.tool_call.mentions import dates, numbers, times, words
from genenv.domains.tool_call.roles import role_pairs

DOMAIN = ToolCallDomain()


def offered_with(answer: str) -> list[str]:
    """The seed group offering the called functions, as the simulator sees them (the first group for `[]`)."""
    names = {call.name for call in parse_calls(answer)}
    return list(next(group for group in GROUPS if names <= set(group)))


def reason(question: str, answer: str, offered: list[str] | None = None) -> str | None:
    functions = [CATALOG[name].schema for name in offered or offered_with(answer)]
    task = TaskInstance("g1/v0", {"functions": functions, "question": question}, answer, "")
    return DOMAIN.validate(Candidate(raw="", task=task), ValidationContext()).reject_reason


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("Wake me up at 17:56", "[timer.start(minutes=17)]", "ungrounded_argument"),
        (
            "Please create a calendar event on January 20, 2028 at 20:00",
            '[calendar.create_event(title="January 20th 2028", date="2028", start_time="10:00")]',
            "ungrounded_argument",
        ),
        (
            "I just recorded running for 117 minutes",
            '[fitness.log_workout(activity="cycling", minutes=117)]',
            "enum_not_named",
        ),
        (
            "How many seconds is 120 meters?",
            '[units.convert_weight(value=120, from_unit="g", to_unit="kg")]',
            "function_mismatch",
        ),
    ],
)
def test_wrong_answers_seen_in_simulator_output_are_rejected(question: str, answer: str, expected: str) -> None:
    assert reason(question, answer) == expected


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        (
            "I want to know the forecast for Cape Town for 10 days.",
            '[weather.get_forecast(city="Cape Town")]',
            "value_unused",
        ),
        ("Forecast for Cape Town for 10 days.", '[weather.get_forecast(city="Cape Town", days=10)]', None),
        ("Split 92 between 4 people with 15% tip.", "[finance.split_bill(total=92, people=4)]", "value_unused"),
        ("Split 92 between 4 people with 15% tip.", "[finance.split_bill(total=92, people=4, tip_percent=15)]", None),
    ],
)
def test_a_number_stated_with_a_unit_goes_to_the_parameter_of_that_unit(question, answer, expected) -> None:
    """From the wrong labels of generations 5-8 of the issue-46 comparison: "for 10 days" with `days` at its default."""
    assert reason(question, answer) == expected


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        (
            "Find a gas station for 2 people.",
            '[places.search_nearby(category="gas_station", radius_km=2)]',
            "unit_mismatch",
        ),
        ("Find a gas station within 2 km.", '[places.search_nearby(category="gas_station", radius_km=2)]', None),
        (
            "Book a ride for 3 people from the office to the airport.",
            '[rides.request_ride(pickup="the office", dropoff="the airport", seats=3)]',
            None,
        ),
        ("What's 130 grams in kilograms?", '[units.convert_weight(value=130, from_unit="g", to_unit="kg")]', None),
        ("Turn it to 40 percent volume.", "[music.set_volume(level=40)]", None),
        ("What's the ozone level in Toronto?", '[weather.get_air_quality(city="Toronto")]', "enum_named_unused"),
        ("What's the ozone level in Toronto?", '[weather.get_air_quality(city="Toronto", pollutant="ozone")]', None),
        ("Air quality in Toronto?", '[weather.get_air_quality(city="Toronto")]', None),
    ],
)
def test_a_unit_or_an_enum_value_the_request_states_is_the_one_the_answer_takes(question, answer, expected) -> None:
    """From the wrong labels of the fresh sample of run l56b (bench/data/labelled_l56b_g1_g5_tasks.jsonl): "2 people"
    as a 2 km radius, "ozone" asked for with the pollutant left at its default; right answers beside each."""
    assert reason(question, answer) == expected


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        (
            "How many inches is 25.5 grams in kilograms?",
            '[units.convert_weight(value=25.5, from_unit="g", to_unit="kg")]',
            "unit_named_unused",
        ),
        ("How many kilograms is 25.5 grams?", '[units.convert_weight(value=25.5, from_unit="g", to_unit="kg")]', None),
        ("I'm at 5 km, e.g. in miles?", '[units.convert_length(value=5, from_unit="km", to_unit="mi")]', None),
        (
            "Find a gas station in the 200 square metres.",
            '[places.search_nearby(category="gas_station", radius_km=200)]',
            "unit_mismatch",
        ),
        ("How many kilometers is 5 miles?", '[units.convert_length(value=5, from_unit="mi", to_unit="km")]', None),
        (
            "What's 150 minutes of yoga doing?",
            '[fitness.log_workout(activity="yoga", minutes=150)]',
            "question_as_order",
        ),
        ("What's on the shopping list for onions?", '[shopping_list.add_items(items=["onions"])]', "question_as_order"),
        ("Can you log 150 minutes of yoga?", '[fitness.log_workout(activity="yoga", minutes=150)]', None),
        ("Add onions to my shopping list?", '[shopping_list.add_items(items=["onions"])]', None),
        ("How much sleep is 7.5 hours?", "[health.log_sleep(hours=7.5)]", "question_as_order"),
        ("Is it possible to add onions to my list?", '[shopping_list.add_items(items=["onions"])]', None),
        ("What’s on my shopping list for onions?", '[shopping_list.add_items(items=["onions"])]', "question_as_order"),
        (
            "How many calories do 150 minutes of yoga burn at 70 kg?",
            '[fitness.calories_burned(activity="yoga", minutes=150, weight_kg=70)]',
            None,
        ),
        (
            "Text Ana: are you coming tonight?",
            '[chat.send_text(contact="Ana", message="are you coming tonight?")]',
            None,
        ),
    ],
)
def test_a_unit_the_call_cannot_take_or_a_question_answered_by_an_action_is_rejected(question, answer, expected):
    """From the wrong labels of the earlier samples (bench/data/labelled_*.jsonl): a third unit in a conversion, an
    area as a radius, a question read as an order (logging a workout, adding to the list); right answers beside each,
    among them a question the call carries as its message."""
    assert reason(question, answer) == expected


def test_each_wrong_value_has_its_reason() -> None:
    assert reason("Wake me up at 17:56", "[timer.start(minutes=17)]", ["timer.start"]) == "ungrounded_argument"
    assert reason("Wake me up at 17:56", '[alarm.set(time="17:50")]') == "ungrounded_argument"
    assert reason("Wake me up at 17:56", "[timer.start(minutes=56)]") == "ungrounded_argument"
    assert reason("How clean is the air in Lima?", '[weather.get_forecast(city="Lima")]') == "function_mismatch"
    weight = '[units.convert_weight(value=120, from_unit="g", to_unit="kg")]'
    assert reason("How many seconds is 120 meters?", weight, ["units.convert_weight"]) == "enum_not_named"
    event = '[calendar.create_event(title="Gym", date="2026-01-20", start_time="20:00")]'
    assert reason("Add Gym to my calendar on January 20, 2028 at 20:00", event) == "ungrounded_argument"
    assert reason("Add Gym to my calendar on January 20 at 20:00", event) is None
    assert reason("Lock the front door.", '[home.lock(door="back")]') == "enum_not_named"
    assert reason("Log 250 ml of water.", "[health.log_water(ml=25)]") == "ungrounded_argument"
    assert reason("Lock the front door.", "[]", ["home.switch_lights", "home.lock"]) == "function_mismatch"


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Wake me up at 17:56", '[alarm.set(time="17:56")]'),
        ("Could you wake me at 5:56pm every day?", '[alarm.set(time="17:56", repeat_daily=True)]'),
        ("Alarm at 5 p.m. please", '[alarm.set(time="17:00")]'),
        (
            "Please create a calendar event called Gym on January 20, 2028 at 20:00",
            '[calendar.create_event(title="Gym", date="2028-01-20", start_time="20:00")]',
        ),
        (
            "Put a dentist appointment in my calendar on the 3rd of March at 9am",
            '[calendar.create_event(title="dentist appointment", date="2026-03-03", start_time="09:00")]',
        ),
        ("I just recorded running for 117 minutes", '[fitness.log_workout(activity="running", minutes=117)]'),
        ("I ran for 45 min today, log it", '[fitness.log_workout(activity="running", minutes=45)]'),
        ("How many kilograms is 120 grams?", '[units.convert_weight(value=120, from_unit="g", to_unit="kg")]'),
        ("What is 120 g in kg?", '[units.convert_weight(value=120, from_unit="g", to_unit="kg")]'),
        ("Convert five miles into kilometres", '[units.convert_length(value=5, from_unit="mi", to_unit="km")]'),
        ("How many feet is 3 inches?", '[units.convert_length(value=3, from_unit="in", to_unit="ft")]'),
        (
            "It's -5 °C outside, what is that in fahrenheit?",
            '[units.convert_temperature(value=-5, from_scale="celsius", to_scale="fahrenheit")]',
        ),
        ("What's the weather going to be in Porto this week?", '[weather.get_forecast(city="Porto", days=7)]'),
        ("Two-day forecast for Porto", '[weather.get_forecast(city="Porto", days=2)]'),
        ("Set a 10-minute timer for the pasta", '[timer.start(minutes=10, label="pasta")]'),
        ("How many euros do I get for one US dollar?", '[finance.get_exchange_rate(base="USD", target="EUR")]'),
        ("Find all the JPG photos in ~/Pictures", '[files.find(pattern="*.jpg", folder="~/Pictures")]'),
        ("Split the $1,120.50 bill among 4 people", "[finance.split_bill(total=1120.5, people=4)]"),
        ("What is 255 in hex?", "[math.to_base(number=255, base=16)]"),
        (
            "Walk me from the museum to the harbour",
            '[maps.directions(origin="the museum", destination="the harbour", mode="walking")]',
        ),
        ("Show Porto FC's upcoming fixtures.", '[sports.fixtures(team="Porto FC")]'),
        ("Add eggs, milk and bread to the shopping list", '[shopping_list.add_items(items=["eggs", "milk", "bread"])]'),
        ("Who won the 1998 World Cup?", "[]"),
    ],
)
def test_correct_paraphrases_are_kept(question: str, answer: str) -> None:
    assert reason(question, answer) is None


def test_defaults_and_booleans_need_no_mention() -> None:
    functions = [CATALOG["weather.get_air_quality"].schema]
    calls = parse_calls('[weather.get_air_quality(city="Lima", pollutant="pm2.5")]')
    assert answer_error(calls, functions, "How is the air in Lima?") is None
    calls = parse_calls('[alarm.set(time="07:00", repeat_daily=False)]')
    assert answer_error(calls, [CATALOG["alarm.set"].schema], "Wake me at 7 am.") is None


@pytest.mark.parametrize(
    ("question", "answer"),
    [  # the three wrong labels read by hand in a `make demo` run's valid simulator tasks (issue 45)
        (
            "Order a ride for 2 people from the office to the beach",
            '[rides.request_ride(pickup="the beach", dropoff="the office", seats=2)]',
        ),
        ("How many centimeters is 1.5 meters?", '[units.convert_length(value=1.5, from_unit="cm", to_unit="m")]'),
        ("How many meters is 101.1 feet?", '[units.convert_length(value=101.1, from_unit="m", to_unit="ft")]'),
    ],
)
def test_arguments_that_swap_the_roles_the_request_gives_are_rejected(question: str, answer: str) -> None:
    assert reason(question, answer) == "roles_swapped"
    source, target = ("pickup", "dropoff") if "ride" in answer else ("from_unit", "to_unit")
    call = parse_calls(answer)[0]
    swapped_back = answer.replace(f'{source}="{call.arguments[source]}"', "SOURCE").replace(
        f'{target}="{call.arguments[target]}"', f'{target}="{call.arguments[source]}"'
    )
    assert reason(question, swapped_back.replace("SOURCE", f'{source}="{call.arguments[target]}"')) is None


@pytest.mark.parametrize(
    ("question", "answer"),
    [  # wrong labels read by hand in the issue-45 comparison (bench/data/labelled_c45_tasks.jsonl)
        (
            "I hold a passport from Japan, can I visit Norway visa-free?",
            '[travel.visa_rules(passport_country="Norway", destination_country="Norway")]',
        ),
        ("Make a new zip archive called ~/Projects/bomber.", '[files.compress(paths=["bomber"], archive="bomber")]'),
        ("Find all files in ~/Pictures/*.", '[files.find(pattern="*.picture", folder="~/Pictures")]'),
        ("Compress photo.png as zip.", '[files.compress(paths=["photo.png"], archive="photo.png")]'),
        (  # a number too (the l60q census, bench/data/labelled_l60q_g1_g2_tasks.jsonl)
            "What will be my monthly payment for 8 years at 10.33% interest?",
            "[finance.loan_payment(principal=8, annual_rate=10.33, years=8)]",
        ),
    ],
)
def test_one_stated_value_in_two_roles_is_rejected(question: str, answer: str) -> None:
    assert reason(question, answer) == "value_reused"


def test_a_value_named_as_often_as_it_is_used_is_kept() -> None:
    question = "Book a ride for 5 people from the train station to the train station."
    answer = '[rides.request_ride(pickup="the train station", dropoff="the train station", seats=5)]'
    assert reason(question, answer) is None
    assert reason(question.replace(" to the train station", ""), answer) == "value_reused"


def test_every_role_pair_of_the_catalog_is_checked_both_ways() -> None:
    """Every catalog function with a source and a target parameter: 50 sampled requests keep their answer, and the
    same answer with the two values swapped is rejected, whatever cue or order the sampler used."""
    checked = 0
    for name, entry in CATALOG.items():
        pairs = role_pairs(entry.schema["parameters"]["properties"])
        r = random.Random(name)
        for _ in range(50 if pairs else 0):
            question, arguments = entry.make(r)
            source, target = pairs[0]
            if arguments.get(source) in (None, arguments.get(target)):
                continue
            swapped = arguments | {source: arguments[target], target: arguments[source]}
            assert answer_error([Call(name, arguments)], [entry.schema], question) is None, question
            assert answer_error([Call(name, swapped)], [entry.schema], question) == "roles_swapped", question
            checked += 1
    assert checked >= 300  # 7 catalog functions have a pair


@pytest.mark.parametrize("random_seed", [1, 2, 3])
def test_no_false_rejection_on_other_draws_of_the_seed_recipe(random_seed: int) -> None:
    """Beyond the shipped seeds: other draws of the same samplers, groups and abstentions all pass."""
    rejected = []
    for row in build_seeds(random_seed):
        task = TaskInstance("s", {"functions": row["functions"], "question": row["question"]}, row["answer"], "")
        if DOMAIN.validate(Candidate(raw="", task=task), ValidationContext()).reject_reason is not None:
            rejected.append(row["question"])
    assert rejected == []


def test_what_a_request_states() -> None:
    text = "Wake me at 17:56 on March 3, 2026 or 14 Sept, then 5pm; SKU-1234, -5 degrees, 1,250 and 3, 45, two weeks"
    assert times(text) == {"17:56", "17:00"}
    assert dates(text) == {"2026-03-03", "2026-09-14"}
    assert numbers(text) == {1234, -5, 1250, 1, 250, 3, 45, 2, 7}
    assert times("at 5:30") == {"05:30", "17:30"} and times("noon or 12 am") == {"12:00", "00:00"}
    assert dates("2026-02-30, 2026-13-01 or 28 Feb") == {"2026-02-28"}
    assert words("Boca Juniors's PDFs, I'd say: don't") == ("boca", "junior", "pdf", "i", "say", "dont")


SUN_AND_CLOCK = ["weather.get_sun_times", "clock.time_in"]


@pytest.mark.parametrize(
    ("question", "answer", "offered", "expected"),
    [
        # list_of_one (l62 and its edge fork): the mean of one number is that number; a list of one string is not
        ("What's 3.31 as a decimal?", "[math.mean(numbers=[3.31])]", None, "list_of_one"),
        ("What's 45.6 as a percentage?", "[math.mean(numbers=[45.6])]", None, "list_of_one"),
        ("What's the mean of 3.31 and 4.5?", "[math.mean(numbers=[3.31, 4.5])]", None, None),
        ("Add rice to the shopping list.", '[shopping_list.add_items(items=["rice"])]', None, None),
        # function_mismatch (l62, 3 labels): "time" speaks for both, "local" only for the clock
        (
            "What time is the local time in Tallinn 22 March 2026?",
            '[weather.get_sun_times(city="Tallinn", date="2026-03-22")]',
            SUN_AND_CLOCK,
            "function_mismatch",
        ),
        (
            "When is sunrise in Tallinn on 22 March 2026, local time?",
            '[weather.get_sun_times(city="Tallinn", date="2026-03-22")]',
            SUN_AND_CLOCK,
            None,
        ),
        ("What's the local time in Tallinn?", '[clock.time_in(city="Tallinn")]', SUN_AND_CLOCK, None),
        # placeholder_value (l62): a slot names what the request leaves out; brackets around a stated value do not
        (
            "Mail sendoff for [recipient_email] with subject Invoice for March.",
            '[mail.compose(to="recipient_email", subject="Invoice for March")]',
            None,
            "placeholder_value",
        ),
        (
            "Email ann@example.com with the subject '[Draft] Invoice for March'.",
            '[mail.compose(to="ann@example.com", subject="[Draft] Invoice for March")]',
            None,
            None,
        ),
        (
            "Email Ann <ann@example.com> with the subject Invoice for March.",
            '[mail.compose(to="ann@example.com", subject="Invoice for March")]',
            None,
            None,
        ),
        # roles_contradicted (the ride l56b, l60q and l62 repeat word for word): one value cued in both roles; a
        # value in one role each, or one value filling both roles of one call, is left to the other checks
        (
            "Book a ride for 3 people from the office to the train station, pick them up at the train station.",
            '[rides.request_ride(pickup="the office", dropoff="the train station", seats=3)]',
            None,
            "roles_contradicted",
        ),
        (
            "I want to take a lift to the airport, pick me up at the stadium.",
            '[rides.request_ride(pickup="the stadium", dropoff="the airport")]',
            None,
            None,
        ),
        (
            "Book a ride for 5 people from the train station to the train station.",
            '[rides.request_ride(pickup="the train station", dropoff="the train station", seats=5)]',
            None,
            None,
        ),
        (
            "Book a ride for 5 people from The train station to the train station.",
            '[rides.request_ride(pickup="The train station", dropoff="the train station", seats=5)]',
            None,
            None,
        ),
        # format_as_file_name (l64, 4 of 21 wrong labels): "as zip" says what kind of file, not its name
        (
            "Compress photo.png as zip.",
            '[files.compress(paths=["photo.png"], archive="zip")]',
            None,
            "format_as_file_name",
        ),
        (
            "Compress photo.png with arima-zip.",
            '[files.compress(paths=["photo.png"], archive="arima-zip")]',
            None,
            "format_as_file_name",
        ),
        ("Compress photo.png as zip.zip.", '[files.compress(paths=["photo.png"], archive="zip.zip")]', None, None),
        ("Compress photo.png as backup.", '[files.compress(paths=["photo.png"], archive="backup")]', None, None),
    ],
)
def test_wrong_labels_of_the_censuses_are_rejected_and_their_right_neighbours_kept(
    question, answer, offered, expected
) -> None:
    """Each rule written from hand-labelled census tasks (bench/data/labelled_*.jsonl), beside the nearest right
    answers it must keep."""
    assert reason(question, answer, offered) == expected
