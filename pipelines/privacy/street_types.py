"""Street words: every USPS street suffix (Publication 28, Appendix C1) and the Spanish types of street.

An English address ends its street with a suffix ("Willow Bend", "Harbor Pkwy"); a Spanish one opens it
with a type ("Calle", "Cuesta de", "Cra."). The lists are the families, not examples: every primary
name of USPS C1 with the spellings USPS lists as commonly used and its standard abbreviation, a few
British ones, and the types of street of Spain's Catastro and of Latin American addresses, full and
abbreviated.

Many USPS suffixes are everyday words too ("Park", "Key", "View", "Station", "Run"): "Chapter 3 Event
Loop" is no address. Those (`EN_WORD_SUFFIXES`) make an address only with more around them: a unit, a
city with a state and ZIP or a postcode, or an address cue before the number ("ship to", "my address
is"). The other suffixes (`EN_STREET_SUFFIXES`) are street words wherever they follow a number and
capitalised words, as "Street" and "Ave" always were.
"""

from __future__ import annotations

USPS_C1 = """
alley: allee alley ally aly | anex: anex annex annx anx | arcade: arc arcade | avenue: av ave aven avenu avenue avn avnue
bayou: bayoo bayou byu | beach: bch beach | bend: bend bnd | bluff: blf bluf bluff | bluffs: bluffs blfs
bottom: bot btm bottm bottom | boulevard: blvd boul boulevard boulv | branch: br brnch branch
bridge: brdge brg bridge | brook: brk brook | brooks: brooks brks | burg: burg bg | burgs: burgs bgs
bypass: byp bypa bypas bypass byps | camp: camp cp cmp | canyon: canyn canyon cnyn cyn | cape: cape cpe
causeway: causeway causwa cswy | center: cen cent center centr centre cnter cntr ctr | centers: centers ctrs
circle: cir circ circl circle crcl crcle | circles: circles cirs | cliff: clf cliff | cliffs: clfs cliffs
club: clb club | common: common cmn | commons: commons cmns | corner: cor corner | corners: corners cors
course: course crse | court: court ct | courts: courts cts | cove: cove cv | coves: coves cvs | creek: creek crk
crescent: crescent cres crsent crsnt | crest: crest crst | crossing: crossing crssng xing | crossroad: crossroad xrd
crossroads: crossroads xrds | curve: curve curv | dale: dale dl | dam: dam dm | divide: div divide dv dvd
drive: dr driv drive drv | drives: drives drs | estate: est estate | estates: estates ests
expressway: exp expr express expressway expw expy | extension: ext extension extn extnsn | extensions: exts
fall: fall | falls: falls fls | ferry: ferry frry fry | field: field fld | fields: fields flds | flat: flat flt
flats: flats flts | ford: ford frd | fords: fords frds | forest: forest forests frst | forge: forg forge frg
forges: forges frgs | fork: fork frk | forks: forks frks | fort: fort frt ft | freeway: freeway freewy frway frwy fwy
garden: garden gardn grden grdn gdn | gardens: gardens gdns grdns | gateway: gateway gatewy gatway gtway gtwy
glen: glen gln | glens: glens glns | green: green grn | greens: greens grns | grove: grov grove grv
groves: groves grvs | harbor: harb harbor harbr hbr hrbor | harbors: harbors hbrs | haven: haven hvn
heights: ht hts heights | highway: highway highwy hiway hiwy hway hwy | hill: hill hl | hills: hills hls
hollow: hllw hollow hollows holw holws | inlet: inlet inlt | island: is island islnd | islands: islands islnds iss
isle: isle isles | junction: jct jction jctn junction junctn juncton | junctions: jctns jcts junctions
key: key ky | keys: keys kys | knoll: knl knol knoll | knolls: knls knolls | lake: lk lake | lakes: lks lakes
land: land | landing: landing lndg lndng | lane: lane ln | light: lgt light | lights: lights lgts | loaf: lf loaf
lock: lck lock | locks: lcks locks | lodge: ldg ldge lodg lodge | loop: loop loops | mall: mall | manor: mnr manor
manors: manors mnrs | meadow: meadow mdw | meadows: mdws meadows medows | mews: mews | mill: mill ml
mills: mills mls | mission: missn mssn msn mission | motorway: motorway mtwy | mount: mnt mt mount
mountain: mntain mntn mountain mountin mtin mtn | mountains: mntns mountains mtns | neck: nck neck
orchard: orch orchard orchrd | oval: oval ovl | overpass: overpass opas | park: park prk | parks: parks
parkway: parkway parkwy pkway pkwy pky | parkways: parkways pkwys | pass: pass | passage: passage psge
path: path paths | pike: pike pikes | pine: pine pne | pines: pines pnes | place: place pl | plain: plain pln
plains: plains plns | plaza: plaza plz plza | point: point pt | points: points pts | port: port prt
ports: ports prts | prairie: pr prairie prr | radial: rad radial radiel radl | ramp: ramp
ranch: ranch ranches rnch rnchs | rapid: rapid rpd | rapids: rapids rpds | rest: rest rst | ridge: rdg rdge ridge
ridges: rdgs ridges | river: riv river rvr rivr | road: rd road | roads: roads rds | route: route rte | row: row
rue: rue | run: run | shoal: shl shoal | shoals: shls shoals | shore: shoar shore shr | shores: shoars shores shrs
skyway: skyway skwy | spring: spg spng spring sprng | springs: spgs spngs springs sprngs | spur: spur
spurs: spurs | square: sq sqr sqre squ square | squares: sqrs squares sqs | station: sta station statn stn
stravenue: stra strav straven stravenue stravn strvn strvnue | stream: stream streme strm
street: street strt st str | streets: streets sts | summit: smt sumit sumitt summit | terrace: ter terr terrace
throughway: throughway trwy | trace: trace traces trce | track: track tracks trak trk trks
trafficway: trafficway trfy | trail: trail trails trl trls | trailer: trailer trlr trlrs
tunnel: tunel tunl tunls tunnel tunnels tunnl | turnpike: trnpk turnpike turnpk tpke | underpass: underpass upas
union: un union | unions: unions uns | valley: valley vally vlly vly | valleys: valleys vlys
viaduct: vdct via viadct viaduct | view: view vw | views: views vws
village: vill villag village villg villiage vlg | villages: villages vlgs | ville: ville vl
vista: vis vist vista vst vsta | walk: walk | walks: walks | wall: wall | way: wy way | ways: ways
well: well wl | wells: wells wls
"""
"""USPS Publication 28, Appendix C1: each primary suffix name and the spellings USPS maps to it."""

BRITISH_SUFFIXES = "close mews gardens grove walk row crescent rise vale quay parade wharf yard gate embankment approach drove wynd chase"
"""Street words of British addresses that USPS does not list."""


def _c1_words() -> frozenset[str]:
    return frozenset(word for entry in USPS_C1.replace("\n", " | ").split("|") if entry.strip()
                     for word in entry.replace(":", " ").split())


ALL_EN_SUFFIXES = _c1_words() | frozenset(BRITISH_SUFFIXES.split())
EN_WORD_SUFFIXES = frozenset(
    """is un via key keys ky mt pt ft br cp ml hl dl lf pr est ext exp express arc sta vis div dv bot cen cent
    bridge branch camp center centers centre club common commons corner corners course curve divide estate estates
    extension extensions fall field fields flat flats ford fords forest forests forge forges fork forks fort
    gateway green greens haven island islands junction junctions land light lights lock locks loop loops mall
    mission mount oval overpass park parks pass passage path paths pine pines plain plains point points port ports
    radial rad ramp rest river route run shore shores spring springs spur spurs station stream summit trace traces
    track tracks trailer tunnel tunnels union unions view views vista wall well wells ways rise gate yard approach
    chase cape dam bend beach lake lakes hill hills mill mills ranch rapid rapids valley village ville crossing
    express cv cvs dvd hls str ht row cts ctr ctrs sts iss pts mls msn dm rst expr vl wl cor""".split()  # noqa: SIM905
)
"""USPS suffixes that are also everyday or technical words: an address only with a unit, a city and
ZIP or postcode, or an address cue around them."""
EN_STREET_SUFFIXES = ALL_EN_SUFFIXES - EN_WORD_SUFFIXES
"""Suffixes that are street words wherever they close a numbered run of capitalised words."""

ES_STREET_TYPES = """
calle c/ cl cl. cll. calleja callejón callejon cjón. cjon. avenida avda avda. avd. av. av avinguda avgda.
plaza pza. pza plza. pl. plaça placeta plazuela paseo pº p.º ps. pso. passeig pg. carrer cra. cra kra. rambla rbla.
ronda rda. camino cno. cmno. carretera ctra. crta. carr. travesía travesia trva. trav. travessera glorieta gta. glta.
vía via vial urbanización urbanizacion urb. polígono poligono pol. bulevar boulevard blvd. blv. bv. alameda pasaje
passatge pje. psje. pasadizo costanilla cañada rúa rua ruela gran
"""
"""Spanish, Catalan and Latin American types of street, full and abbreviated, that open a street in
any case ("calle Mayor 5"); "gran" stands for "Gran Vía"."""
ES_WORD_TYPES = """
cuesta subida bajada senda vereda acceso muelle paraje partida lugar barrio barriada colonia calzada cerrada circuito
circunvalación circunvalacion diagonal transversal privada prolongación prolongacion retorno viaducto periférico
periferico andador ampliación ampliacion continuación continuacion corredor peatonal autopista autovía autovia ruta
carrera
"""
"""Types that are everyday words too ("clave privada RSA 2048", "la cuesta Abajo"): a street only when
written capitalised, as addresses write them ("Privada Cepeda 628", "Cuesta de Eufemia Bastida 507")."""
ES_NUMBERED_TYPES = "c. cr. tr. tv. dg. diag. col."
"""Abbreviations too short to open a named street ("C. Python 3"): only a numbered one follows them,
as Colombia writes it ("Cr. 7 # 45-10", "Dg. 166W # 39-67")."""
