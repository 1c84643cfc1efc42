"""The functions of the shipped seed set and, for each, a sampler of natural requests with their calls.

Written for this project (no benchmark function or question is reused); make_seeds.py assembles the seed set.
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Any, NamedTuple

Request = tuple[str, dict[str, Any]]


class Entry(NamedTuple):
    schema: dict[str, Any]
    make: Callable[[Random], Request]
    """Samples one request and the arguments of the call that fulfils it."""


CATALOG: dict[str, Entry] = {}


def param(type_: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "description": description, **extra}


def function(name: str, description: str, required: list[str], /, **properties: dict[str, Any]):
    """Registers a function schema with its request sampler."""

    def decorate(make: Callable[[Random], Request]) -> Callable[[Random], Request]:
        schema = {
            "name": name,
            "description": description,
            "parameters": {"type": "dict", "properties": properties, "required": required},
        }
        CATALOG[name] = Entry(schema, make)
        return make

    return decorate


CITIES = [
    "Lisbon", "Osaka", "Denver", "Nairobi", "Melbourne", "Toronto", "Krakow", "Lima", "Reykjavik", "Seoul",
    "Marrakesh", "Vancouver", "Porto", "Hanoi", "Edinburgh", "Cape Town", "Austin", "Bergen", "Santiago", "Tallinn",
]  # fmt: skip
COUNTRIES = [
    "Japan", "Brazil", "Kenya", "Canada", "India", "Norway", "Mexico", "Vietnam", "Morocco", "Australia",
    "Peru", "Turkey", "Iceland", "Chile", "Thailand",
]  # fmt: skip
PEOPLE = ["Priya", "Tomas", "Mei", "Jonas", "Amara", "Luca", "Hana", "Omar", "Sofia", "Kwame", "Ingrid", "Diego"]
MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF", "INR", "MXN", "SEK"]
TICKERS = ["AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "SHOP", "SAP", "ASML", "NFLX", "INTC"]
ROOMS = ["kitchen", "living room", "bedroom", "office", "hallway", "bathroom", "garage"]
SONGS = [
    ("Harvest Moon", "Neil Young"), ("Dreams", "Fleetwood Mac"), ("Clocks", "Coldplay"),
    ("Redbone", "Childish Gambino"), ("Jolene", "Dolly Parton"), ("Vienna", "Billy Joel"),
    ("Golden Hour", "JVKE"), ("Heroes", "David Bowie"), ("Valerie", "Amy Winehouse"), ("Yellow", "Coldplay"),
]  # fmt: skip
INGREDIENTS = ["chickpeas", "spinach", "salmon", "mushrooms", "lentils", "tofu", "zucchini", "eggs", "rice", "leeks"]
FOODS = ["banana", "oats", "almonds", "chicken breast", "brown rice", "avocado", "greek yogurt", "apple", "quinoa"]
DISHES = ["lasagna", "pad thai", "banana bread", "chili", "risotto", "shakshuka", "pancakes", "minestrone"]
WORDS = ["ephemeral", "serendipity", "laconic", "ubiquitous", "quixotic", "sonder", "petrichor", "gregarious"]
LANGUAGES = ["Spanish", "French", "German", "Japanese", "Italian", "Portuguese", "Korean", "Swahili"]
PHRASES = ["where is the train station", "good morning", "how much does this cost", "thank you very much"]
MOVIES = ["Dune Part Two", "Past Lives", "Oppenheimer", "Inside Out 2", "The Wild Robot", "Perfect Days"]
AUTHORS = ["Ursula K. Le Guin", "Kazuo Ishiguro", "Chimamanda Ngozi Adichie", "Terry Pratchett", "Octavia Butler"]
TEAMS = ["Arsenal", "Boca Juniors", "Celtic", "Ajax", "Benfica", "Napoli", "Galatasaray", "Porto FC"]
STOPS = ["Central Station", "Elm Street", "Harbour Square", "University Gate", "Market Hall", "Riverside"]
PLACES = ["the airport", "the office", "home", "the museum", "the stadium", "the harbour", "the train station"]


def pick(r: Random, options: list[Request]) -> Request:
    return r.choice(options)


YEAR = 2026
"""The year of every sampled date; a request that names no year means this one."""


def date(r: Random) -> tuple[str, str]:
    """A date in YEAR as (how a person says it, ISO)."""
    month, day = r.randint(1, 12), r.randint(1, 28)
    iso = f"{YEAR}-{month:02d}-{day:02d}"
    spoken = r.choice([f"{MONTHS[month - 1]} {day}, {YEAR}", f"{day} {MONTHS[month - 1]} {YEAR}", iso])
    return spoken, iso


def clock(r: Random) -> tuple[str, str]:
    """A time of day as (how a person says it, HH:MM)."""
    hour, minute = r.randint(6, 21), r.choice([0, 15, 30, 45])
    hhmm = f"{hour:02d}:{minute:02d}"
    spoken = r.choice([f"{(hour - 1) % 12 + 1}:{minute:02d} {'am' if hour < 12 else 'pm'}", hhmm])
    return spoken, hhmm


def money(r: Random, low: int, high: int) -> float:
    return round(r.uniform(low, high), 2)


# weather
@function(
    "weather.get_forecast",
    "Daily weather forecast for a city.",
    ["city"],
    city=param("string", "City name."),
    days=param("integer", "Number of days to forecast, 1 to 10.", default=3),
)
def _forecast(r: Random) -> Request:
    city, days = r.choice(CITIES), r.randint(2, 10)
    return pick(r, [
        (f"What will the weather be like in {city} over the next {days} days?", {"city": city, "days": days}),
        (f"Can I get a {days}-day forecast for {city}?", {"city": city, "days": days}),
        (f"Will I need an umbrella in {city} this week?", {"city": city, "days": 7}),
        (f"Show me the forecast for {city}.", {"city": city}),
    ])  # fmt: skip


@function(
    "weather.get_air_quality",
    "Current air quality reading for a city.",
    ["city"],
    city=param("string", "City name."),
    pollutant=param("string", "Pollutant to report.", enum=["pm2.5", "pm10", "ozone", "no2"], default="pm2.5"),
)
def _air_quality(r: Random) -> Request:
    city, pollutant = r.choice(CITIES), r.choice(["pm10", "ozone", "no2"])
    return pick(r, [
        (f"How clean is the air in {city} right now?", {"city": city}),
        (f"Check the {pollutant} level in {city}.", {"city": city, "pollutant": pollutant}),
        (f"Is the {pollutant} concentration in {city} bad today?", {"city": city, "pollutant": pollutant}),
        (f"My friend in {city} has asthma, what's the air quality there?", {"city": city}),
    ])  # fmt: skip


@function(
    "weather.get_sun_times",
    "Sunrise and sunset times for a city on a date.",
    ["city", "date"],
    city=param("string", "City name."),
    date=param("string", "Date in YYYY-MM-DD format."),
)
def _sun_times(r: Random) -> Request:
    city, (spoken, iso) = r.choice(CITIES), date(r)
    args = {"city": city, "date": iso}
    return pick(r, [
        (f"When does the sun rise in {city} on {spoken}?", args),
        (f"I want to photograph the sunset in {city} on {spoken}. What time is it?", args),
        (f"Sunrise and sunset for {city}, {spoken} please.", args),
    ])  # fmt: skip


# calendar, reminders, timers
@function(
    "calendar.create_event",
    "Add an event to the user's calendar.",
    ["title", "date", "start_time"],
    title=param("string", "Event title."),
    date=param("string", "Date in YYYY-MM-DD format."),
    start_time=param("string", "Start time, 24-hour HH:MM."),
)
def _create_event(r: Random) -> Request:
    (spoken_day, iso), (spoken_time, hhmm) = date(r), clock(r)
    who = r.choice(PEOPLE)
    title = r.choice([f"Lunch with {who}", "Dentist", "Team retro", f"Call {who}", "Yoga class", "Book club"])
    args = {"title": title, "date": iso, "start_time": hhmm}
    return pick(r, [
        (f"Put '{title}' in my calendar on {spoken_day} at {spoken_time}.", args),
        (f"Schedule {title} for {spoken_day}, starting {spoken_time}.", args),
        (f"Can you add an event called {title} on {spoken_day} at {spoken_time}?", args),
    ])  # fmt: skip


@function(
    "calendar.list_events",
    "List the events on one day.",
    ["date"],
    date=param("string", "Date in YYYY-MM-DD format."),
    calendar=param("string", "Which calendar.", enum=["work", "personal", "family"], default="personal"),
)
def _list_events(r: Random) -> Request:
    (spoken, iso), calendar = date(r), r.choice(["work", "family"])
    return pick(r, [
        (f"What's on my calendar for {spoken}?", {"date": iso}),
        (f"Do I have any {calendar} events on {spoken}?", {"date": iso, "calendar": calendar}),
        (f"List my {calendar} appointments for {spoken}.", {"date": iso, "calendar": calendar}),
    ])  # fmt: skip


@function(
    "calendar.delete_event",
    "Remove an event from the calendar by its id.",
    ["event_id"],
    event_id=param("integer", "Identifier of the event."),
)
def _delete_event(r: Random) -> Request:
    event_id = r.randint(100, 9999)
    return pick(r, [
        (f"Cancel calendar event {event_id}.", {"event_id": event_id}),
        (f"Please delete the event with id {event_id} from my calendar.", {"event_id": event_id}),
        (f"Event #{event_id} isn't happening anymore, remove it.", {"event_id": event_id}),
    ])  # fmt: skip


@function(
    "timer.start",
    "Start a countdown timer.",
    ["minutes"],
    minutes=param("integer", "Length of the timer in minutes."),
    label=param("string", "Optional name shown when the timer ends."),
)
def _timer(r: Random) -> Request:
    minutes, label = r.randint(2, 90), r.choice(["pasta", "laundry", "tea", "nap", "oven", "study break"])
    return pick(r, [
        (f"Set a timer for {minutes} minutes.", {"minutes": minutes}),
        (f"Start a {minutes} minute timer called {label}.", {"minutes": minutes, "label": label}),
        (f"Remind me in {minutes} minutes, label it {label}.", {"minutes": minutes, "label": label}),
        (f"Countdown of {minutes} min please.", {"minutes": minutes}),
    ])  # fmt: skip


@function(
    "alarm.set",
    "Set an alarm clock.",
    ["time"],
    time=param("string", "Alarm time, 24-hour HH:MM."),
    repeat_daily=param("boolean", "Whether the alarm repeats every day.", default=False),
)
def _alarm(r: Random) -> Request:
    spoken, hhmm = clock(r)
    return pick(r, [
        (f"Wake me up at {spoken}.", {"time": hhmm}),
        (f"Set an alarm for {spoken} every day.", {"time": hhmm, "repeat_daily": True}),
        (f"I need a daily alarm at {spoken}.", {"time": hhmm, "repeat_daily": True}),
        (f"Alarm at {spoken} tomorrow, just once.", {"time": hhmm, "repeat_daily": False}),
    ])  # fmt: skip


@function(
    "reminders.add",
    "Create a reminder for a given day.",
    ["text", "due_date"],
    text=param("string", "What to be reminded of."),
    due_date=param("string", "Date in YYYY-MM-DD format."),
)
def _reminder(r: Random) -> Request:
    spoken, iso = date(r)
    text = r.choice(["renew passport", "pay rent", "water the plants", "book flights", "send invoice", "buy a gift"])
    args = {"text": text, "due_date": iso}
    return pick(r, [
        (f"Remind me to {text} on {spoken}.", args),
        (f"Add a reminder: {text}, due {spoken}.", args),
        (f"Don't let me forget to {text} by {spoken}.", args),
    ])  # fmt: skip


# unit conversion
LENGTH_UNITS = {"m": "meters", "km": "kilometers", "mi": "miles", "ft": "feet", "in": "inches", "cm": "centimeters"}
WEIGHT_UNITS = {"kg": "kilograms", "g": "grams", "lb": "pounds", "oz": "ounces"}


def _conversion(r: Random, units: dict[str, str], value: float) -> Request:
    source, target = r.sample(sorted(units), 2)
    args = {"value": value, "from_unit": source, "to_unit": target}
    return pick(r, [
        (f"Convert {value} {units[source]} to {units[target]}.", args),
        (f"How many {units[target]} is {value} {units[source]}?", args),
        (f"What's {value} {units[source]} in {units[target]}?", args),
    ])  # fmt: skip


@function(
    "units.convert_length",
    "Convert a length between units.",
    ["value", "from_unit", "to_unit"],
    value=param("float", "Amount to convert."),
    from_unit=param("string", "Unit of the value.", enum=sorted(LENGTH_UNITS)),
    to_unit=param("string", "Unit to convert to.", enum=sorted(LENGTH_UNITS)),
)
def _convert_length(r: Random) -> Request:
    return _conversion(r, LENGTH_UNITS, r.choice([r.randint(1, 500), r.randint(1, 99) + 0.5]))


@function(
    "units.convert_weight",
    "Convert a weight between units.",
    ["value", "from_unit", "to_unit"],
    value=param("float", "Amount to convert."),
    from_unit=param("string", "Unit of the value.", enum=sorted(WEIGHT_UNITS)),
    to_unit=param("string", "Unit to convert to.", enum=sorted(WEIGHT_UNITS)),
)
def _convert_weight(r: Random) -> Request:
    return _conversion(r, WEIGHT_UNITS, r.choice([r.randint(1, 300), r.randint(1, 20) + 0.25]))


@function(
    "units.convert_temperature",
    "Convert a temperature between scales.",
    ["value", "from_scale", "to_scale"],
    value=param("float", "Temperature to convert."),
    from_scale=param("string", "Scale of the value.", enum=["celsius", "fahrenheit", "kelvin"]),
    to_scale=param("string", "Scale to convert to.", enum=["celsius", "fahrenheit", "kelvin"]),
)
def _convert_temperature(r: Random) -> Request:
    source, target = r.sample(["celsius", "fahrenheit", "kelvin"], 2)
    value = r.randint(-20, 110) if source != "kelvin" else r.randint(250, 380)
    args = {"value": value, "from_scale": source, "to_scale": target}
    return pick(r, [
        (f"Convert {value} degrees {source} to {target}.", args),
        (f"The recipe says {value} {source}. What is that in {target}?", args),
        (f"{value} {source} in {target}?", args),
    ])  # fmt: skip


# finance
@function(
    "finance.get_exchange_rate",
    "Latest exchange rate between two currencies.",
    ["base", "target"],
    base=param("string", "ISO code of the currency to convert from, e.g. EUR."),
    target=param("string", "ISO code of the currency to convert to."),
)
def _exchange_rate(r: Random) -> Request:
    base, target = r.sample(CURRENCIES, 2)
    args = {"base": base, "target": target}
    return pick(r, [
        (f"What's the {base} to {target} rate today?", args),
        (f"How many {target} do I get for one {base}?", args),
        (f"Look up the exchange rate from {base} into {target}.", args),
    ])  # fmt: skip


@function(
    "finance.loan_payment",
    "Monthly payment of a fixed-rate loan.",
    ["principal", "annual_rate", "years"],
    principal=param("float", "Amount borrowed."),
    annual_rate=param("float", "Yearly interest rate in percent."),
    years=param("integer", "Length of the loan in years."),
)
def _loan(r: Random) -> Request:
    principal = r.choice([5000, 12000, 25000, 180000, 250000, 320000])
    rate, years = r.choice([3.5, 4.2, 5.0, 6.75, 7.1]), r.choice([3, 5, 10, 15, 25, 30])
    args = {"principal": principal, "annual_rate": rate, "years": years}
    return pick(r, [
        (f"What would I pay per month on a {principal} loan at {rate}% over {years} years?", args),
        (f"Monthly installment for borrowing {principal} for {years} years at {rate} percent interest?", args),
        (f"I'm taking out {principal} at {rate}% for {years} years. Work out the monthly payment.", args),
    ])  # fmt: skip


@function(
    "finance.stock_quote",
    "Latest price of a listed stock.",
    ["symbol"],
    symbol=param("string", "Ticker symbol."),
)
def _stock_quote(r: Random) -> Request:
    symbol = r.choice(TICKERS)
    return pick(r, [
        (f"How is {symbol} trading right now?", {"symbol": symbol}),
        (f"Get me a quote for {symbol}.", {"symbol": symbol}),
        (f"What's the share price of {symbol}?", {"symbol": symbol}),
    ])  # fmt: skip


@function(
    "finance.split_bill",
    "Split a bill between people, tip included.",
    ["total", "people"],
    total=param("float", "Bill total before tip."),
    people=param("integer", "Number of people sharing."),
    tip_percent=param("float", "Tip in percent.", default=15),
)
def _split_bill(r: Random) -> Request:
    total, people, tip = money(r, 30, 400), r.randint(2, 8), r.choice([10, 18, 20])
    return pick(r, [
        (f"Split a {total} bill between {people} people.", {"total": total, "people": people}),
        (f"Dinner came to {total}. There are {people} of us and we tip {tip}%. How much each?",
         {"total": total, "people": people, "tip_percent": tip}),
        (f"Divide {total} among {people} friends, plus a tip of {tip} percent.",
         {"total": total, "people": people, "tip_percent": tip}),
    ])  # fmt: skip


EXPENSE_CATEGORIES = ["groceries", "transport", "dining", "utilities", "entertainment"]


@function(
    "budget.add_expense",
    "Record an expense in the user's budget.",
    ["amount", "category"],
    amount=param("float", "Amount spent."),
    category=param("string", "Budget category.", enum=EXPENSE_CATEGORIES),
    note=param("string", "Optional short note."),
)
def _expense(r: Random) -> Request:
    amount = money(r, 3, 250)
    category, note = r.choice(
        [("groceries", "weekly shop"), ("transport", "bus pass"), ("dining", "pizza night"),
         ("utilities", "electricity bill"), ("entertainment", "concert tickets")]
    )  # fmt: skip
    return pick(r, [
        (f"Log {amount} under {category}.", {"amount": amount, "category": category}),
        (f"I spent {amount} on {note}, file it as {category}.",
         {"amount": amount, "category": category, "note": note}),
        (f"Add a {category} expense of {amount} with the note '{note}'.",
         {"amount": amount, "category": category, "note": note}),
    ])  # fmt: skip


# travel and getting around
@function(
    "travel.search_flights",
    "Search one-way flights.",
    ["origin", "destination", "date"],
    origin=param("string", "Departure city."),
    destination=param("string", "Arrival city."),
    date=param("string", "Departure date in YYYY-MM-DD format."),
)
def _flights(r: Random) -> Request:
    (origin, destination), (spoken, iso) = r.sample(CITIES, 2), date(r)
    args = {"origin": origin, "destination": destination, "date": iso}
    return pick(r, [
        (f"Find flights from {origin} to {destination} on {spoken}.", args),
        (f"I need to fly {origin} to {destination}, leaving {spoken}.", args),
        (f"Are there any flights to {destination} out of {origin} on {spoken}?", args),
    ])  # fmt: skip


@function(
    "travel.find_hotels",
    "Find hotels in a city for a number of nights.",
    ["city", "nights"],
    city=param("string", "City to stay in."),
    nights=param("integer", "Number of nights."),
    max_price=param("float", "Highest price per night."),
)
def _hotels(r: Random) -> Request:
    city, nights, price = r.choice(CITIES), r.randint(1, 9), r.choice([80, 120, 150, 200])
    return pick(r, [
        (f"Look for a hotel in {city} for {nights} nights.", {"city": city, "nights": nights}),
        (f"I need somewhere to stay in {city}, {nights} nights, under {price} a night.",
         {"city": city, "nights": nights, "max_price": price}),
        (f"Hotels in {city} for {nights} nights, max {price} per night.",
         {"city": city, "nights": nights, "max_price": price}),
    ])  # fmt: skip


@function(
    "travel.visa_rules",
    "Entry and visa rules for a passport holder visiting a country.",
    ["passport_country", "destination_country"],
    passport_country=param("string", "Country that issued the passport."),
    destination_country=param("string", "Country to visit."),
)
def _visa(r: Random) -> Request:
    home, away = r.sample(COUNTRIES, 2)
    args = {"passport_country": home, "destination_country": away}
    return pick(r, [
        (f"Do I need a visa for {away} with a {home} passport?", args),
        (f"What are the entry rules for {home} citizens travelling to {away}?", args),
        (f"I hold a passport from {home}. Can I visit {away} visa-free?", args),
    ])  # fmt: skip


@function(
    "transit.next_departures",
    "Next public transport departures from a stop.",
    ["stop"],
    stop=param("string", "Name of the stop or station."),
    line=param("string", "Only this line, e.g. '14' or 'Blue'."),
)
def _departures(r: Random) -> Request:
    stop, line = r.choice(STOPS), r.choice(["14", "7", "Blue", "N2", "Red", "31"])
    return pick(r, [
        (f"When is the next bus from {stop}?", {"stop": stop}),
        (f"Next departures of line {line} at {stop}?", {"stop": stop, "line": line}),
        (f"I'm at {stop}, when does the {line} come?", {"stop": stop, "line": line}),
    ])  # fmt: skip


TRAVEL_VERBS = {"walking": "walk", "cycling": "cycle", "transit": "take public transport", "driving": "drive"}


@function(
    "maps.directions",
    "Route between two places.",
    ["origin", "destination"],
    origin=param("string", "Start address or place."),
    destination=param("string", "End address or place."),
    mode=param("string", "How to travel.", enum=["driving", "walking", "cycling", "transit"], default="driving"),
)
def _directions(r: Random) -> Request:
    origin, destination = r.sample(PLACES, 2)
    mode = r.choice(["walking", "cycling", "transit"])
    verb = TRAVEL_VERBS[mode]
    return pick(r, [
        (f"How do I drive from {origin} to {destination}?", {"origin": origin, "destination": destination}),
        (f"I want to {verb} from {origin} to {destination}, show me the way.",
         {"origin": origin, "destination": destination, "mode": mode}),
        (f"Give me {mode} directions from {origin} to {destination}.",
         {"origin": origin, "destination": destination, "mode": mode}),
    ])  # fmt: skip


PLACE_CATEGORIES = ["cafe", "pharmacy", "gas_station", "supermarket", "atm", "park"]


@function(
    "places.search_nearby",
    "Find places of a kind near the user.",
    ["category"],
    category=param("string", "Kind of place.", enum=PLACE_CATEGORIES),
    radius_km=param("float", "Search radius in kilometers.", default=1.0),
)
def _nearby(r: Random) -> Request:
    category, radius = r.choice(PLACE_CATEGORIES), r.choice([0.5, 2, 3, 5])
    spoken = category.replace("_", " ")
    return pick(r, [
        (f"Is there a {spoken} near me?", {"category": category}),
        (f"Find a {spoken} within {radius} km.", {"category": category, "radius_km": radius}),
        (f"I need an open {spoken} at most {radius} kilometers away.", {"category": category, "radius_km": radius}),
    ])  # fmt: skip


@function(
    "rides.request_ride",
    "Order a ride from a pickup point to a drop-off point.",
    ["pickup", "dropoff"],
    pickup=param("string", "Where to be picked up."),
    dropoff=param("string", "Where to go."),
    seats=param("integer", "Number of passengers.", default=1),
)
def _ride(r: Random) -> Request:
    pickup, dropoff = r.sample(PLACES, 2)
    seats = r.randint(2, 5)
    return pick(r, [
        (f"Get me a car from {pickup} to {dropoff}.", {"pickup": pickup, "dropoff": dropoff}),
        (f"Book a ride for {seats} people from {pickup} to {dropoff}.",
         {"pickup": pickup, "dropoff": dropoff, "seats": seats}),
        (f"We are {seats} and need a lift to {dropoff}, pick us up at {pickup}.",
         {"pickup": pickup, "dropoff": dropoff, "seats": seats}),
    ])  # fmt: skip


# food
@function(
    "recipes.search",
    "Find recipes using an ingredient.",
    ["ingredient"],
    ingredient=param("string", "Main ingredient."),
    max_minutes=param("integer", "Longest total cooking time in minutes."),
)
def _recipes(r: Random) -> Request:
    ingredient, minutes = r.choice(INGREDIENTS), r.choice([15, 20, 30, 45])
    return pick(r, [
        (f"What can I cook with {ingredient}?", {"ingredient": ingredient}),
        (f"Find me a {ingredient} recipe that takes under {minutes} minutes.",
         {"ingredient": ingredient, "max_minutes": minutes}),
        (f"I've got {ingredient} and only {minutes} minutes. Any recipe ideas?",
         {"ingredient": ingredient, "max_minutes": minutes}),
    ])  # fmt: skip


@function(
    "recipes.scale",
    "Rescale a saved recipe to a number of servings.",
    ["recipe", "servings"],
    recipe=param("string", "Name of the saved recipe."),
    servings=param("integer", "Servings wanted."),
)
def _scale(r: Random) -> Request:
    dish, servings = r.choice(DISHES), r.randint(2, 12)
    args = {"recipe": dish, "servings": servings}
    return pick(r, [
        (f"Scale my {dish} recipe to {servings} servings.", args),
        (f"I'm cooking {dish} for {servings} people, adjust the quantities.", args),
        (f"Rework the {dish} recipe so it serves {servings}.", args),
    ])  # fmt: skip


@function(
    "nutrition.lookup",
    "Calories and macronutrients of a food portion.",
    ["food", "grams"],
    food=param("string", "Food name."),
    grams=param("float", "Portion weight in grams."),
)
def _nutrition(r: Random) -> Request:
    food, grams = r.choice(FOODS), r.choice([30, 50, 100, 150, 200, 250])
    args = {"food": food, "grams": grams}
    return pick(r, [
        (f"How many calories are in {grams} g of {food}?", args),
        (f"Nutrition facts for {grams} grams of {food}, please.", args),
        (f"I ate {grams}g of {food}. What did that give me in protein and carbs?", args),
    ])  # fmt: skip


@function(
    "restaurants.reserve",
    "Reserve a table at a restaurant tonight.",
    ["restaurant", "party_size", "time"],
    restaurant=param("string", "Restaurant name."),
    party_size=param("integer", "Number of guests."),
    time=param("string", "Reservation time, 24-hour HH:MM."),
)
def _reserve(r: Random) -> Request:
    place = r.choice(["Casa Lupe", "The Olive Tree", "Sakura House", "Bistro Nord", "Blue Lantern", "Mama Ngozi"])
    size, (spoken, hhmm) = r.randint(2, 8), clock(r)
    args = {"restaurant": place, "party_size": size, "time": hhmm}
    return pick(r, [
        (f"Book a table for {size} at {place} at {spoken} tonight.", args),
        (f"Reserve {place} for {size} people, {spoken}.", args),
        (f"Can you get us a table at {place} tonight? We're {size}, around {spoken}.", args),
    ])  # fmt: skip


# messages
@function(
    "mail.compose",
    "Send an email.",
    ["to", "subject"],
    to=param("string", "Recipient email address."),
    subject=param("string", "Subject line."),
    body=param("string", "Message text."),
)
def _mail(r: Random) -> Request:
    who = r.choice(PEOPLE)
    address = f"{who.lower()}@example.com"
    subject = r.choice(["Invoice for March", "Weekend plans", "Meeting notes", "Quick question", "Thank you"])
    body = r.choice(["See attached.", "Are you free on Saturday?", "Running ten minutes late."])
    return pick(r, [
        (f"Email {address} with the subject '{subject}'.", {"to": address, "subject": subject}),
        (f"Send {address} a mail titled '{subject}' saying: {body}",
         {"to": address, "subject": subject, "body": body}),
        (f"Write to {address}, subject {subject}, message: {body}",
         {"to": address, "subject": subject, "body": body}),
    ])  # fmt: skip


@function(
    "mail.search_inbox",
    "Search the inbox.",
    ["query"],
    query=param("string", "Words to search for."),
    unread_only=param("boolean", "Only unread messages.", default=False),
)
def _inbox(r: Random) -> Request:
    query = r.choice(["boarding pass", "receipt", "contract", r.choice(PEOPLE), "newsletter", "password reset"])
    return pick(r, [
        (f"Find emails about {query}.", {"query": query}),
        (f"Any unread messages mentioning {query}?", {"query": query, "unread_only": True}),
        (f"Search my inbox for {query}, unread ones only.", {"query": query, "unread_only": True}),
        (f"Dig up every email with {query} in it, read or not.", {"query": query, "unread_only": False}),
    ])  # fmt: skip


@function(
    "chat.send_text",
    "Send a text message to a contact.",
    ["contact", "message"],
    contact=param("string", "Contact name."),
    message=param("string", "Message text."),
)
def _text(r: Random) -> Request:
    who = r.choice(PEOPLE)
    message = r.choice(["I'm on my way", "Happy birthday!", "Call me when you can", "Dinner is ready", "Running late"])
    args = {"contact": who, "message": message}
    return pick(r, [
        (f"Text {who}: {message}", args),
        (f"Send {who} a message saying '{message}'.", args),
        (f"Tell {who} \"{message}\" by text.", args),
    ])  # fmt: skip


# shopping
@function(
    "shop.search_products",
    "Search the online store.",
    ["query"],
    query=param("string", "What to look for."),
    max_price=param("float", "Highest price."),
)
def _products(r: Random) -> Request:
    query = r.choice(["running shoes", "desk lamp", "wireless earbuds", "yoga mat", "rain jacket", "coffee grinder"])
    price = r.choice([25, 40, 60, 100, 150])
    return pick(r, [
        (f"Search the shop for {query}.", {"query": query}),
        (f"Show me {query} under {price}.", {"query": query, "max_price": price}),
        (f"I'm looking for {query}, my budget is {price} at most.", {"query": query, "max_price": price}),
    ])  # fmt: skip


@function(
    "shop.add_to_cart",
    "Add a product to the cart.",
    ["product_id"],
    product_id=param("string", "Product identifier, e.g. SKU-1234."),
    quantity=param("integer", "How many.", default=1),
)
def _cart(r: Random) -> Request:
    product, quantity = f"SKU-{r.randint(1000, 9999)}", r.randint(2, 6)
    return pick(r, [
        (f"Add {product} to my cart.", {"product_id": product}),
        (f"Put {quantity} of {product} in the basket.", {"product_id": product, "quantity": quantity}),
        (f"I'd like {quantity} units of item {product}.", {"product_id": product, "quantity": quantity}),
    ])  # fmt: skip


@function(
    "shop.track_order",
    "Delivery status of an order.",
    ["order_id"],
    order_id=param("string", "Order number, e.g. ORD-48213."),
)
def _track(r: Random) -> Request:
    order = f"ORD-{r.randint(10000, 99999)}"
    return pick(r, [
        (f"Where is my order {order}?", {"order_id": order}),
        (f"Track package {order}.", {"order_id": order}),
        (f"Has {order} shipped yet?", {"order_id": order}),
    ])  # fmt: skip


@function(
    "shopping_list.add_items",
    "Add items to the shopping list.",
    ["items"],
    items=param("array", "Items to add.", items={"type": "string"}),
)
def _shopping_list(r: Random) -> Request:
    items = r.sample(
        ["milk", "bread", "eggs", "coffee", "apples", "rice", "butter", "cheese", "onions"], r.randint(1, 3)
    )
    listed = " and ".join(items) if len(items) < 3 else f"{items[0]}, {items[1]} and {items[2]}"
    return pick(r, [
        (f"Add {listed} to my shopping list.", {"items": items}),
        (f"We're out of {listed}, put it on the list.", {"items": items}),
        (f"Shopping list: {listed}.", {"items": items}),
    ])  # fmt: skip


# maths
@function(
    "math.percent_of",
    "A percentage of a number.",
    ["percent", "value"],
    percent=param("float", "Percentage, e.g. 15 for 15%."),
    value=param("float", "The whole amount."),
)
def _percent(r: Random) -> Request:
    percent, value = r.choice([5, 12.5, 15, 20, 35, 8]), r.choice([80, 240, 1250, 64, 999])
    args = {"percent": percent, "value": value}
    return pick(r, [
        (f"What is {percent}% of {value}?", args),
        (f"Work out {percent} percent of {value}.", args),
        (f"If I save {percent}% of {value}, how much is that?", args),
    ])  # fmt: skip


@function(
    "math.mean",
    "Arithmetic mean of a list of numbers.",
    ["numbers"],
    numbers=param("array", "The numbers.", items={"type": "float"}),
)
def _mean(r: Random) -> Request:
    numbers = [r.randint(1, 99) for _ in range(r.randint(3, 6))]
    listed = ", ".join(str(n) for n in numbers)
    return pick(r, [
        (f"Average of {listed}?", {"numbers": numbers}),
        (f"My test scores were {listed}. What's my mean score?", {"numbers": numbers}),
        (f"Compute the mean of these values: {listed}.", {"numbers": numbers}),
    ])  # fmt: skip


@function(
    "math.round_number",
    "Round a number to a number of decimal places.",
    ["value"],
    value=param("float", "Number to round."),
    decimals=param("integer", "Decimal places to keep.", default=0),
)
def _round(r: Random) -> Request:
    value, decimals = round(r.uniform(1, 1000), 4), r.randint(2, 3)
    return pick(r, [
        (f"Round {value} to {decimals} decimal places.", {"value": value, "decimals": decimals}),
        (f"Round {value} to the nearest whole number.", {"value": value}),
        (f"Give me {value} with only {decimals} digits after the point.", {"value": value, "decimals": decimals}),
    ])  # fmt: skip


@function(
    "math.is_prime",
    "Whether an integer is prime.",
    ["number"],
    number=param("integer", "The integer to test."),
)
def _prime(r: Random) -> Request:
    number = r.randint(50, 20000)
    return pick(r, [
        (f"Is {number} a prime number?", {"number": number}),
        (f"Check whether {number} is prime.", {"number": number}),
        (f"Can {number} be divided by anything other than 1 and itself?", {"number": number}),
    ])  # fmt: skip


BASE_NAMES = {2: "binary", 8: "octal", 16: "hexadecimal"}


@function(
    "math.to_base",
    "Write an integer in another base.",
    ["number", "base"],
    number=param("integer", "Integer in base 10."),
    base=param("integer", "Target base.", enum=[2, 8, 16]),
)
def _to_base(r: Random) -> Request:
    number = r.randint(10, 5000)
    base, word = r.choice(list(BASE_NAMES.items()))
    args = {"number": number, "base": base}
    return pick(r, [
        (f"What is {number} in {word}?", args),
        (f"Convert {number} to base {base}.", args),
        (f"Write the decimal number {number} as {word}.", args),
    ])  # fmt: skip


# files
@function(
    "files.make_folder",
    "Create a folder.",
    ["path"],
    path=param("string", "Path of the new folder."),
)
def _folder(r: Random) -> Request:
    path = r.choice(
        ["~/Projects/garden", "~/Documents/taxes-2026", "~/Pictures/holiday", "~/Music/demos", "/tmp/build"]
    )
    return pick(r, [
        (f"Create a folder at {path}.", {"path": path}),
        (f"Make a new directory {path}.", {"path": path}),
        (f"I need an empty folder called {path}.", {"path": path}),
    ])  # fmt: skip


FILE_KINDS = {"*.pdf": "PDFs", "*.jpg": "JPEG photos", "*.csv": "CSV files", "*.mp3": "MP3s"}


@function(
    "files.find",
    "Find files whose name matches a pattern.",
    ["pattern"],
    pattern=param("string", "Glob pattern, e.g. *.pdf."),
    folder=param("string", "Folder to search in.", default="~"),
)
def _find_files(r: Random) -> Request:
    pattern, kind = r.choice(list(FILE_KINDS.items()))
    folder = r.choice(["~/Downloads", "~/Desktop", "~/Documents"])
    return pick(r, [
        (f"Find all {kind} in my home folder.", {"pattern": pattern}),
        (f"Search {folder} for files matching {pattern}.", {"pattern": pattern, "folder": folder}),
        (f"List the {kind} in {folder}.", {"pattern": pattern, "folder": folder}),
    ])  # fmt: skip


@function(
    "files.compress",
    "Put files into a zip archive.",
    ["paths", "archive"],
    paths=param("array", "Files to include.", items={"type": "string"}),
    archive=param("string", "Name of the zip file."),
)
def _zip(r: Random) -> Request:
    paths = r.sample(
        ["report.docx", "budget.xlsx", "slides.pptx", "photo.png", "notes.txt", "data.csv"], r.randint(1, 3)
    )
    archive = r.choice(["backup.zip", "handover.zip", "q3.zip", "send.zip"])
    listed = " and ".join(paths)
    args = {"paths": paths, "archive": archive}
    return pick(r, [
        (f"Zip {listed} into {archive}.", args),
        (f"Compress {listed} as {archive}.", args),
        (f"Make an archive named {archive} with {listed}.", args),
    ])  # fmt: skip


# music
@function(
    "music.play",
    "Play a song.",
    ["title"],
    title=param("string", "Song title."),
    artist=param("string", "Artist name."),
)
def _play(r: Random) -> Request:
    title, artist = r.choice(SONGS)
    return pick(r, [
        (f"Play {title}.", {"title": title}),
        (f"Put on {title} by {artist}.", {"title": title, "artist": artist}),
        (f"I want to hear {artist}'s {title}.", {"title": title, "artist": artist}),
    ])  # fmt: skip


@function(
    "music.set_volume",
    "Set the playback volume.",
    ["level"],
    level=param("integer", "Volume from 0 to 100."),
)
def _volume(r: Random) -> Request:
    level = r.choice([10, 20, 25, 35, 40, 55, 60, 75, 80, 90])
    return pick(r, [
        (f"Set the volume to {level}.", {"level": level}),
        (f"Turn it to {level} percent volume.", {"level": level}),
        (f"Volume {level} please.", {"level": level}),
    ])  # fmt: skip


@function(
    "music.new_playlist",
    "Create an empty playlist.",
    ["name"],
    name=param("string", "Playlist name."),
    public=param("boolean", "Whether others can see it.", default=False),
)
def _playlist(r: Random) -> Request:
    name = r.choice(["Road Trip", "Focus", "Sunday Morning", "Gym Mix", "Rainy Days", "Party"])
    return pick(r, [
        (f"Create a playlist called {name}.", {"name": name}),
        (f"Make a public playlist named {name}.", {"name": name, "public": True}),
        (f"New playlist '{name}', keep it private.", {"name": name, "public": False}),
    ])  # fmt: skip


# fitness and health
ACTIVITIES = ["running", "cycling", "swimming", "yoga", "walking"]


@function(
    "fitness.log_workout",
    "Record a workout.",
    ["activity", "minutes"],
    activity=param("string", "Kind of workout.", enum=ACTIVITIES),
    minutes=param("integer", "Duration in minutes."),
)
def _workout(r: Random) -> Request:
    activity, minutes = r.choice(ACTIVITIES), r.randint(10, 120)
    args = {"activity": activity, "minutes": minutes}
    return pick(r, [
        (f"Log {minutes} minutes of {activity}.", args),
        (f"I just did {activity} for {minutes} minutes, record it.", args),
        (f"Add a {minutes}-minute {activity} session to my workouts.", args),
    ])  # fmt: skip


@function(
    "fitness.calories_burned",
    "Estimate calories burned by an activity.",
    ["activity", "minutes", "weight_kg"],
    activity=param("string", "Kind of activity.", enum=ACTIVITIES),
    minutes=param("integer", "Duration in minutes."),
    weight_kg=param("float", "Body weight in kilograms."),
)
def _burned(r: Random) -> Request:
    activity, minutes, weight = r.choice(ACTIVITIES), r.randint(15, 90), r.randint(50, 110)
    args = {"activity": activity, "minutes": minutes, "weight_kg": weight}
    return pick(r, [
        (f"How many calories does {minutes} minutes of {activity} burn for someone who weighs {weight} kg?", args),
        (f"I weigh {weight} kg and did {minutes} minutes of {activity}. Calories burned?", args),
        (f"Estimate the energy I used: {activity}, {minutes} min, body weight {weight} kg.", args),
    ])  # fmt: skip


@function(
    "health.log_water",
    "Record water the user drank.",
    ["ml"],
    ml=param("integer", "Amount in milliliters."),
)
def _water(r: Random) -> Request:
    ml = r.choice([200, 250, 330, 500, 750, 1000])
    return pick(r, [
        (f"Log {ml} ml of water.", {"ml": ml}),
        (f"I just drank {ml} milliliters of water.", {"ml": ml}),
        (f"Add {ml}ml to today's water intake.", {"ml": ml}),
    ])  # fmt: skip


@function(
    "health.log_sleep",
    "Record last night's sleep.",
    ["hours"],
    hours=param("float", "Hours slept."),
    quality=param("string", "How it felt.", enum=["poor", "fair", "good"]),
)
def _sleep(r: Random) -> Request:
    hours, quality = r.choice([5, 5.5, 6, 6.5, 7, 7.5, 8, 9]), r.choice(["poor", "fair", "good"])
    return pick(r, [
        (f"I slept {hours} hours last night, log it.", {"hours": hours}),
        (f"Record {hours} hours of sleep, quality {quality}.", {"hours": hours, "quality": quality}),
        (f"Log last night: {hours} hours, it was {quality}.", {"hours": hours, "quality": quality}),
    ])  # fmt: skip


# smart home
@function(
    "home.set_thermostat",
    "Set the target temperature in degrees Celsius.",
    ["temperature"],
    temperature=param("float", "Target temperature in Celsius."),
    room=param("string", "Room; the whole house when omitted."),
)
def _thermostat(r: Random) -> Request:
    temperature, room = r.choice([18, 19, 20, 20.5, 21, 22, 23.5]), r.choice(ROOMS[:5])
    return pick(r, [
        (f"Set the heating to {temperature} degrees.", {"temperature": temperature}),
        (f"Make the {room} {temperature} °C.", {"temperature": temperature, "room": room}),
        (f"Thermostat in the {room} to {temperature} please.", {"temperature": temperature, "room": room}),
    ])  # fmt: skip


@function(
    "home.switch_lights",
    "Turn the lights in a room on or off.",
    ["room", "on"],
    room=param("string", "Room name."),
    on=param("boolean", "True to switch on, False to switch off."),
)
def _lights(r: Random) -> Request:
    room = r.choice(ROOMS)
    return pick(r, [
        (f"Turn off the {room} lights.", {"room": room, "on": False}),
        (f"Switch on the light in the {room}.", {"room": room, "on": True}),
        (f"It's dark in the {room}, lights on please.", {"room": room, "on": True}),
        (f"Kill the lights in the {room}.", {"room": room, "on": False}),
    ])  # fmt: skip


@function(
    "home.lock",
    "Lock a door.",
    ["door"],
    door=param("string", "Which door.", enum=["front", "back", "garage"]),
)
def _lock(r: Random) -> Request:
    door = r.choice(["front", "back", "garage"])
    return pick(r, [
        (f"Lock the {door} door.", {"door": door}),
        (f"Did I leave the {door} door open? Lock it.", {"door": door}),
        (f"Secure the {door} door for the night.", {"door": door}),
    ])  # fmt: skip


# language, news, entertainment
@function(
    "language.translate",
    "Translate text into another language.",
    ["text", "target_language"],
    text=param("string", "Text to translate."),
    target_language=param("string", "Language to translate into."),
)
def _translate(r: Random) -> Request:
    text, language = r.choice(PHRASES), r.choice(LANGUAGES)
    args = {"text": text, "target_language": language}
    return pick(r, [
        (f"How do you say '{text}' in {language}?", args),
        (f"Translate \"{text}\" into {language}.", args),
        (f"What's the {language} for '{text}'?", args),
    ])  # fmt: skip


@function(
    "dictionary.define",
    "Definition of an English word.",
    ["word"],
    word=param("string", "The word."),
)
def _define(r: Random) -> Request:
    word = r.choice(WORDS)
    return pick(r, [
        (f"What does {word} mean?", {"word": word}),
        (f"Define '{word}'.", {"word": word}),
        (f"I keep seeing the word {word}. What's its meaning?", {"word": word}),
    ])  # fmt: skip


@function(
    "news.headlines",
    "Top news headlines on a topic.",
    ["topic"],
    topic=param("string", "Topic.", enum=["technology", "sports", "business", "science", "health"]),
    count=param("integer", "How many headlines.", default=5),
)
def _news(r: Random) -> Request:
    topic, count = r.choice(["technology", "sports", "business", "science", "health"]), r.choice([3, 8, 10])
    return pick(r, [
        (f"What's new in {topic}?", {"topic": topic}),
        (f"Give me the top {count} {topic} headlines.", {"topic": topic, "count": count}),
        (f"Read me {count} {topic} stories.", {"topic": topic, "count": count}),
    ])  # fmt: skip


@function(
    "cinema.showtimes",
    "Showtimes of a film in a city.",
    ["movie", "city"],
    movie=param("string", "Film title."),
    city=param("string", "City name."),
)
def _showtimes(r: Random) -> Request:
    movie, city = r.choice(MOVIES), r.choice(CITIES)
    args = {"movie": movie, "city": city}
    return pick(r, [
        (f"When is {movie} playing in {city}?", args),
        (f"Showtimes for {movie} in {city}.", args),
        (f"I want to see {movie} tonight, I'm in {city}. What times are there?", args),
    ])  # fmt: skip


@function(
    "books.by_author",
    "Books written by an author.",
    ["author"],
    author=param("string", "Author name."),
    limit=param("integer", "Most results to return.", default=10),
)
def _books(r: Random) -> Request:
    author, limit = r.choice(AUTHORS), r.choice([3, 5])
    return pick(r, [
        (f"What books has {author} written?", {"author": author}),
        (f"List {limit} books by {author}.", {"author": author, "limit": limit}),
        (f"Recommend me {limit} novels from {author}.", {"author": author, "limit": limit}),
    ])  # fmt: skip


@function(
    "sports.fixtures",
    "Upcoming matches of a team.",
    ["team"],
    team=param("string", "Team name."),
)
def _fixtures(r: Random) -> Request:
    team = r.choice(TEAMS)
    return pick(r, [
        (f"When does {team} play next?", {"team": team}),
        (f"Show {team}'s upcoming fixtures.", {"team": team}),
        (f"What games does {team} have coming up?", {"team": team}),
    ])  # fmt: skip


@function(
    "clock.time_in",
    "Current local time in a city.",
    ["city"],
    city=param("string", "City name."),
)
def _time_in(r: Random) -> Request:
    city = r.choice(CITIES)
    return pick(r, [
        (f"What time is it in {city}?", {"city": city}),
        (f"Is it too late to call someone in {city} right now?", {"city": city}),
        (f"Current local time in {city}?", {"city": city}),
    ])  # fmt: skip
