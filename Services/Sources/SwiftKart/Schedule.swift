/// The schedule a new database starts with: five championships on real tracks and campuses,
/// including the session's Duck Pond Dash. Start times are fixed, so every fresh database
/// lists the same races in the same order.
enum Schedule {
    static let races: [ScheduledRace] = corporateCup + baySprint + europeanTrophy + pacificRim + nordicWinter

    private static let corporateCup = [
        ScheduledRace(
            name: "Duck Pond Dash", location: "Apple Park, Cupertino", latitude: 37.3349, longitude: -122.0090,
            startTime: 1_781_198_600, laps: 6, championship: "Corporate Cup",
            drivers: ["Monty", "Pepper", "Mycroft", "Pancakes", "Duke", "Kiko", "Sissi", "Bo"]),
        ScheduledRace(
            name: "Infinite Loop Sprint", location: "Infinite Loop, Cupertino", latitude: 37.3318, longitude: -122.0312,
            startTime: 1_776_013_200, laps: 8, championship: "Corporate Cup",
            drivers: ["Monty", "Pepper", "Mycroft", "Pancakes", "Duke", "Kiko"]),
        ScheduledRace(
            name: "Shoreline Shuffle", location: "Shoreline Park, Mountain View", latitude: 37.4316, longitude: -122.0869,
            startTime: 1_778_432_400, laps: 10, championship: "Corporate Cup",
            drivers: ["Pepper", "Duke", "Kiko", "Sissi", "Bo", "Waffles", "Biscuit"]),
        ScheduledRace(
            name: "Lakeside Loop", location: "Microsoft Campus, Redmond", latitude: 47.6423, longitude: -122.1391,
            startTime: 1_784_307_600, laps: 8, championship: "Corporate Cup",
            drivers: ["Monty", "Mycroft", "Pancakes", "Sissi", "Bo", "Waffles", "Biscuit", "Noodle"]),
        ScheduledRace(
            name: "Bayfront Boulevard", location: "Menlo Park, California", latitude: 37.4848, longitude: -122.1484,
            startTime: 1_787_158_800, laps: 12, championship: "Corporate Cup",
            drivers: ["Pepper", "Mycroft", "Duke", "Kiko", "Noodle", "Juniper"]),
    ]

    private static let baySprint = [
        ScheduledRace(
            name: "Sonoma Sprint", location: "Sonoma Raceway, California", latitude: 38.1613, longitude: -122.4547,
            startTime: 1_775_235_600, laps: 15, championship: "Bay Area Sprint Series",
            drivers: ["Ava Chen", "Luis Ortega", "Mia Novak", "Sam Okafor", "Lena Fischer", "Theo Park", "Ines Duarte", "Ravi Menon"]),
        ScheduledRace(
            name: "Corkscrew Classic", location: "Laguna Seca, Monterey", latitude: 36.5841, longitude: -121.7535,
            startTime: 1_777_222_800, laps: 12, championship: "Bay Area Sprint Series",
            drivers: ["Ava Chen", "Luis Ortega", "Mia Novak", "Sam Okafor", "Lena Fischer", "Theo Park", "Ines Duarte"]),
        ScheduledRace(
            name: "Thunderhill Twelve", location: "Thunderhill Raceway, Willows", latitude: 39.5390, longitude: -122.3310,
            startTime: 1_780_246_800, laps: 12, championship: "Bay Area Sprint Series",
            drivers: ["Ava Chen", "Mia Novak", "Sam Okafor", "Theo Park", "Ines Duarte", "Ravi Menon", "Nora Walsh"]),
        ScheduledRace(
            name: "Golden Gate Grand Prix", location: "Golden Gate Park, San Francisco", latitude: 37.7694, longitude: -122.4862,
            startTime: 1_783_098_000, laps: 10, championship: "Bay Area Sprint Series",
            drivers: ["Ava Chen", "Luis Ortega", "Lena Fischer", "Theo Park", "Ravi Menon", "Nora Walsh", "Omar Haddad", "Yuki Sato"]),
        ScheduledRace(
            name: "Half Moon Bay Hustle", location: "Half Moon Bay, California", latitude: 37.4636, longitude: -122.4286,
            startTime: 1_786_381_200, laps: 9, championship: "Bay Area Sprint Series",
            drivers: ["Luis Ortega", "Mia Novak", "Sam Okafor", "Lena Fischer", "Omar Haddad", "Yuki Sato"]),
    ]

    private static let europeanTrophy = [
        ScheduledRace(
            name: "Lake Garda Trophy", location: "South Garda Karting, Lonato", latitude: 45.4608, longitude: 10.4867,
            startTime: 1_774_090_800, laps: 18, championship: "European Karting Trophy",
            drivers: [
                "Marco Bellini", "Sophie Laurent", "Jonas Becker", "Elena Rossi", "Pieter de Vries", "Ana Silva", "Tomás Novák",
                "Freya Olsen", "Luca Romano", "Chloé Martin",
            ]),
        ScheduledRace(
            name: "Genk Grand Prix", location: "Karting Genk, Belgium", latitude: 50.9800, longitude: 5.5050,
            startTime: 1_776_531_600, laps: 16, championship: "European Karting Trophy",
            drivers: [
                "Marco Bellini", "Sophie Laurent", "Jonas Becker", "Elena Rossi", "Pieter de Vries", "Ana Silva", "Tomás Novák",
                "Freya Olsen",
            ]),
        ScheduledRace(
            name: "Le Mans Kart Sprint", location: "Circuit International, Le Mans", latitude: 47.9390, longitude: 0.2240,
            startTime: 1_779_555_600, laps: 14, championship: "European Karting Trophy",
            drivers: [
                "Sophie Laurent", "Jonas Becker", "Elena Rossi", "Ana Silva", "Tomás Novák", "Freya Olsen", "Luca Romano", "Chloé Martin",
            ]),
        ScheduledRace(
            name: "Kerpen Cup", location: "Erftlandring, Kerpen", latitude: 50.8850, longitude: 6.6940,
            startTime: 1_782_579_600, laps: 15, championship: "European Karting Trophy",
            drivers: ["Marco Bellini", "Jonas Becker", "Pieter de Vries", "Ana Silva", "Freya Olsen", "Luca Romano", "Chloé Martin"]),
        ScheduledRace(
            name: "Zuera Finale", location: "Motorland Zuera, Aragón", latitude: 41.8690, longitude: -0.8130,
            startTime: 1_789_059_600, laps: 20, championship: "European Karting Trophy",
            drivers: [
                "Marco Bellini", "Sophie Laurent", "Jonas Becker", "Elena Rossi", "Pieter de Vries", "Ana Silva", "Tomás Novák",
                "Freya Olsen", "Luca Romano", "Chloé Martin",
            ]),
    ]

    private static let pacificRim = [
        ScheduledRace(
            name: "Suzuka Kart Festival", location: "Suzuka Circuit, Mie", latitude: 34.8431, longitude: 136.5410,
            startTime: 1_775_804_400, laps: 14, championship: "Pacific Rim Series",
            drivers: ["Haruto Tanaka", "Mei Lin", "Jack Murphy", "Aroha Ngata", "Min-jun Kim", "Priya Nair", "Leo Santos", "Hana Suzuki"]),
        ScheduledRace(
            name: "Eastern Creek Enduro", location: "Sydney Motorsport Park", latitude: -33.8050, longitude: 150.8700,
            startTime: 1_778_828_400, laps: 20, championship: "Pacific Rim Series",
            drivers: ["Haruto Tanaka", "Jack Murphy", "Aroha Ngata", "Min-jun Kim", "Priya Nair", "Leo Santos"]),
        ScheduledRace(
            name: "Harbour City Sprint", location: "Auckland Waterfront", latitude: -36.8485, longitude: 174.7633,
            startTime: 1_781_852_400, laps: 10, championship: "Pacific Rim Series",
            drivers: ["Mei Lin", "Jack Murphy", "Aroha Ngata", "Priya Nair", "Leo Santos", "Hana Suzuki", "Tane Parata"]),
        ScheduledRace(
            name: "Marina Bay Night Race", location: "Marina Bay, Singapore", latitude: 1.2914, longitude: 103.8640,
            startTime: 1_784_876_400, laps: 12, championship: "Pacific Rim Series",
            drivers: ["Haruto Tanaka", "Mei Lin", "Min-jun Kim", "Priya Nair", "Leo Santos", "Hana Suzuki", "Tane Parata", "Wei Zhang"]),
        ScheduledRace(
            name: "Han River Rush", location: "Yeouido, Seoul", latitude: 37.5284, longitude: 126.9326,
            startTime: 1_787_900_400, laps: 11, championship: "Pacific Rim Series",
            drivers: ["Haruto Tanaka", "Mei Lin", "Jack Murphy", "Min-jun Kim", "Hana Suzuki", "Wei Zhang"]),
    ]

    private static let nordicWinter = [
        ScheduledRace(
            name: "Midnight Sun Cup", location: "Kemora, Veteli", latitude: 63.4870, longitude: 23.7870,
            startTime: 1_782_018_000, laps: 12, championship: "Nordic Summer Cup",
            drivers: ["Aino Virtanen", "Erik Lund", "Sigrid Berg", "Oskar Nilsson", "Ingrid Dahl", "Mikko Laine"]),
        ScheduledRace(
            name: "Fjord Flyer", location: "Rudskogen, Rakkestad", latitude: 59.3660, longitude: 11.2580,
            startTime: 1_785_128_400, laps: 14, championship: "Nordic Summer Cup",
            drivers: ["Aino Virtanen", "Erik Lund", "Sigrid Berg", "Oskar Nilsson", "Ingrid Dahl", "Mikko Laine", "Astrid Holm"]),
    ]
}
