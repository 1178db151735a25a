"""Street words: every USPS street suffix (Publication 28, Appendix C1) and the Spanish types of
street.

An English address ends its street with a suffix ("Willow Bend", "Harbor Pkwy"); a Spanish one opens
it with a type ("Calle", "Cuesta de", "Cra."). The lists are the families, not examples: every
primary name of USPS C1 with the spellings USPS lists as commonly used and its standard
abbreviation, a few British ones, and the types of street of Spain's Catastro and of Latin American
addresses, full and abbreviated.

Many USPS suffixes are everyday words too ("Park", "Key", "View", "Station", "Run"): "Chapter 3
Event Loop" is no address. Those (`EN_WORD_SUFFIXES`) make an address only with more around them: a
unit, a city with a state and ZIP or a postcode, or an address cue before the number ("ship to", "my
address is"). The other suffixes (`EN_STREET_SUFFIXES`) are street words wherever they follow a
number and capitalised words, as "Street" and "Ave" always were.
"""

from __future__ import annotations

USPS_C1 = """
alley aly: allee ally | anex anx: annex annx | arcade arc | avenue ave: av aven avenu avn avnue | bayou byu: bayoo
beach bch | bend bnd | bluff blf: bluf | bluffs blfs | bottom btm: bot bottm | boulevard blvd: boul boulv
branch br: brnch | bridge brg: brdge | brook brk | brooks brks | burg bg | burgs bgs | bypass byp: bypa bypas byps
camp cp: cmp | canyon cyn: canyn cnyn | cape cpe | causeway cswy: causwa
center ctr: cen cent centr centre cnter cntr | centers ctrs | circle cir: circ circl crcl crcle | circles cirs
cliff clf | cliffs clfs | club clb | common cmn | commons cmns | corner cor | corners cors | course crse | court ct
courts cts | cove cv | coves cvs | creek crk | crescent cres: crsent crsnt | crest crst | crossing xing: crssng
crossroad xrd | crossroads xrds | curve curv | dale dl | dam dm | divide dv: div dvd | drive dr: driv drv
drives drs | estate est | estates ests | expressway expy: exp expr express expw | extension ext: extn extnsn
extensions exts | fall fall | falls fls | ferry fry: frry | field fld | fields flds | flat flt | flats flts
ford frd | fords frds | forest frst: forests | forge frg: forg | forges frgs | fork frk | forks frks | fort ft: frt
freeway fwy: freewy frway frwy | garden gdn: gardn grden grdn | gardens gdns: grdns
gateway gtwy: gatewy gatway gtway | glen gln | glens glns | green grn | greens grns | grove grv: grov | groves grvs
harbor hbr: harb harbr hrbor | harbors hbrs | haven hvn | heights hts: ht | highway hwy: highwy hiway hiwy hway
hill hl | hills hls | hollow holw: hllw hollows holws | inlet inlt | island is: islnd | islands iss: islnds
isle isle: isles | junction jct: jction jctn junctn juncton | junctions jcts: jctns | key ky | keys kys
knoll knl: knol | knolls knls | lake lk | lakes lks | land land | landing lndg: lndng | lane ln | light lgt
lights lgts | loaf lf | lock lck | locks lcks | lodge ldg: ldge lodg | loop loop: loops | mall mall | manor mnr
manors mnrs | meadow mdw | meadows mdws: medows | mews mews | mill ml | mills mls | mission msn: missn mssn
motorway mtwy | mount mt: mnt | mountain mtn: mntain mntn mountin mtin | mountains mtns: mntns | neck nck
orchard orch: orchrd | oval oval: ovl | overpass opas | park park: prk | parks park
parkway pkwy: parkwy pkway pky | parkways pkwy: pkwys | pass pass | passage psge | path path: paths
pike pike: pikes | pine pne | pines pnes | place pl | plain pln | plains plns | plaza plz: plza | point pt
points pts | port prt | ports prts | prairie pr: prr | radial radl: rad radiel | ramp ramp
ranch rnch: ranches rnchs | rapid rpd | rapids rpds | rest rst | ridge rdg: rdge | ridges rdgs
river riv: rvr rivr | road rd | roads rds | route rte | row row | rue rue | run run | shoal shl | shoals shls
shore shr: shoar | shores shrs: shoars | skyway skwy | spring spg: spng sprng | springs spgs: spngs sprngs
spur spur | spurs spur | square sq: sqr sqre squ | squares sqs: sqrs | station sta: statn stn
stravenue stra: strav straven stravn strvn strvnue | stream strm: streme | street st: strt str | streets sts
summit smt: sumit sumitt | terrace ter: terr | throughway trwy | trace trce: traces | track trak: tracks trk trks
trafficway trfy | trail trl: trails trls | trailer trlr: trlrs | tunnel tunl: tunel tunls tunnels tunnl
turnpike tpke: trnpk turnpk | underpass upas | union un | unions uns | valley vly: vally vlly | valleys vlys
viaduct via: vdct viadct | view vw | views vws | village vlg: vill villag villg villiage | villages vlgs | ville vl
vista vis: vist vst vsta | walk walk | walks walk | wall wall | way way: wy | ways ways | well wl | wells wls
"""
"""USPS Publication 28, Appendix C1: each primary suffix name, its standard abbreviation, then the
other spellings USPS lists as commonly used."""

BRITISH_SUFFIXES = "close mews gardens grove walk row crescent rise vale quay parade wharf yard gate embankment approach drove wynd chase"
"""Street words of British addresses that USPS does not list."""


def _c1_entries() -> list[list[str]]:
    return [
        entry.replace(":", " ").split()
        for entry in USPS_C1.replace("\n", " | ").split("|")
        if entry.strip()
    ]


def _c1_words() -> frozenset[str]:
    return frozenset(word for entry in _c1_entries() for word in entry)


USPS_STANDARD = {entry[0]: entry[1] for entry in _c1_entries()}
"""Each primary suffix name and its USPS standard abbreviation ("avenue": "ave")."""


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
calle c/ c/. cl cl. cll. calleja callejón callejon cjón. cjon. avenida avda avda. avd. av. av avinguda avgda.
plaza pza. pza plza. pl. plaça placeta plazuela paseo pº p.º ps. pso. passeig pg. carrer cra. cra kra. rambla rbla.
ronda rda. camino cno. cmno. camí cami carretera ctra. crta. carr. travesía travesia trva. trav. travessera glorieta gta. glta.
urbanización urbanizacion urb. polígono poligono pol. bulevar boulevard blvd. blv. bv. alameda pasaje
passatge pje. psje. pasadizo costanilla cañada rúa rua ruela gran
"""
"""Spanish, Catalan and Latin American types of street, full and abbreviated, that open a street in
any case ("calle Mayor 5"); "gran" stands for "Gran Vía"."""
ES_WORD_TYPES = """
cuesta subida bajada senda vereda acceso muelle paraje partida lugar barrio barriada colonia calzada cerrada circuito
circunvalación circunvalacion diagonal transversal privada prolongación prolongacion retorno viaducto periférico
periferico andador ampliación ampliacion continuación continuacion corredor peatonal autopista autovía autovia ruta
carrera eje vía via vial
"""
"""Types that are everyday words too ("clave privada RSA 2048", "la cuesta Abajo", "via UTF-8"): a
street only when written capitalised, as addresses write them ("Privada Cepeda 628", "Cuesta de
Eufemia Bastida 507"); "eje" stands for Mexico's "Eje vial"."""
ES_NUMBERED_TYPES = "c. cr. tr. tv. dg. diag. col."
"""Abbreviations too short to open a named street ("C. Python 3"): only a numbered one follows them,
as Colombia writes it ("Cr. 7 # 45-10", "Dg. 166W # 39-67")."""
