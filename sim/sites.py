"""The places and networks a simulated mesh is built from: R&E sites, regionals, backbones.

Coordinates and time zones are real; the networks carry real-looking AS numbers and owners,
but every address and router name is made up (``*.example`` domains, prefixes assigned here).

>>> SITES["cern"].utc_offset_h, NETWORKS[SITES["cern"].campus].asn
(1, 513)
>>> round(distance_km(SITES["cern"], SITES["lbl"]))
9337
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Network:
    name: str
    asn: int
    owner: str
    prefix: tuple[int, int]   # the /16 its routers and hosts are numbered from
    domain: str               # router names end in it
    named: float = 0.6        # share of its routers with reverse DNS


@dataclass(frozen=True)
class Place:
    code: str
    lat: float
    lon: float


@dataclass(frozen=True)
class Site:
    code: str
    city: str
    lat: float
    lon: float
    utc_offset_h: int
    campus: str               # Network names
    regional: str | None
    backbone: str
    private_campus: bool      # campus routers numbered from RFC 1918 space


NETWORKS = {n.name: n for n in (
    Network("internet2", 11537, "INTERNET2-RESEARCH-EDU - Internet2, US", (163, 253), "net.i2.example", 0.9),
    Network("esnet", 293, "ESNET - ESnet, US", (134, 55), "es.example", 0.9),
    Network("geant", 20965, "GEANT The GEANT IP Service, NL", (62, 40), "geant.example", 0.9),
    Network("transit", 3356, "LEVEL3 - Level 3 Parent, LLC, US", (4, 69), "transit.example", 0.8),
    Network("he", 6939, "HURRICANE - Hurricane Electric LLC, US", (184, 105), "he.example", 0.8),
    Network("merit", 237, "MERIT-AS-14 - Merit Network Inc., US", (198, 108), "merit.example", 0.7),
    Network("learn", 3794, "LEARN - Lonestar Education and Research Network, US", (74, 200), "learn.example", 0.5),
    Network("pnwgp", 101, "PNWGP - Pacific Northwest Gigapop, US", (209, 124), "pnw.example", 0.6),
    Network("sox", 10490, "SOX - Southern Crossroads, US", (143, 215), "sox.example", 0.5),
    Network("cenic", 2152, "CENIC-AS - California Education Network, US", (137, 164), "cenic.example", 0.8),
    Network("frgp", 14041, "FRGP - Front Range GigaPoP, US", (192, 43), "frgp.example", 0.5),
    Network("maxgp", 10886, "MAX-GIGAPOP - University of Maryland, US", (206, 196), "maxgp.example", 0.8),
    Network("janet", 786, "JANET Jisc Services Limited, GB", (146, 97), "ja.example", 0.8),
    Network("surf", 1103, "SURF-NL SURF B.V., NL", (145, 145), "surf.example", 0.7),
    Network("dfn", 680, "DFN Verein zur Foerderung eines Deutschen Forschungsnetzes e.V., DE", (188, 1), "dfn.example", 0.7),
    Network("garr", 137, "ASGARR Consortium GARR, IT", (90, 147), "garr.example", 0.6),
    Network("switch", 559, "SWITCH Peering requests, CH", (130, 59), "switch.example", 0.7),
    Network("anl", 683, "ANL-AS - Argonne National Laboratory, US", (146, 137), "anl.example", 0.4),
    Network("bnl", 43, "BNL-AS - Brookhaven National Laboratory, US", (130, 199), "bnl.example", 0.4),
    Network("lbl", 16, "LBL - Lawrence Berkeley National Laboratory, US", (131, 243), "lbl.example", 0.5),
    Network("umich", 36375, "UMICH-AS-5 - University of Michigan, US", (141, 211), "umich.example", 0.5),
    Network("utexas", 18, "UTEXAS - University of Texas at Austin, US", (128, 83), "utexas.example", 0.3),
    Network("uw", 73, "WASHINGTON-AS - University of Washington, US", (140, 142), "uw.example", 0.6),
    Network("gatech", 2637, "GEORGIA-TECH - Georgia Institute of Technology, US", (130, 207), "gatech.example", 0.4),
    Network("ucsd", 7377, "UCSD - University of California San Diego, US", (132, 239), "ucsd.example", 0.5),
    Network("ncar", 194, "NCAR-AS - National Center for Atmospheric Research, US", (128, 117), "ucar.example", 0.5),
    Network("umd", 27, "UMDNET - University of Maryland, US", (129, 2), "umd.example", 0.5),
    Network("cern", 513, "CERN - CERN European Organization for Nuclear Research, CH", (188, 184), "cern.example", 0.6),
    Network("ucl", 786, "JANET Jisc Services Limited, GB", (128, 40), "ucl.example", 0.3),
    Network("nikhef", 1104, "NIKHEF-AS NIKHEF, NL", (192, 16), "nikhef.example", 0.6),
    Network("desy", 1754, "DESY Deutsches Elektronen-Synchrotron, DE", (131, 169), "desy.example", 0.6),
    Network("cnaf", 137, "ASGARR Consortium GARR, IT", (131, 154), "cnaf.example", 0.4),
)}

SITES = {s.code: s for s in (
    Site("anl", "Lemont IL", 41.71, -87.98, -6, "anl", None, "esnet", True),
    Site("bnl", "Upton NY", 40.87, -72.88, -5, "bnl", None, "esnet", False),
    Site("lbl", "Berkeley CA", 37.88, -122.25, -8, "lbl", None, "esnet", False),
    Site("umich", "Ann Arbor MI", 42.28, -83.74, -5, "umich", "merit", "internet2", False),
    Site("utexas", "Austin TX", 30.28, -97.73, -6, "utexas", "learn", "internet2", True),
    Site("uw", "Seattle WA", 47.65, -122.31, -8, "uw", "pnwgp", "internet2", False),
    Site("gatech", "Atlanta GA", 33.78, -84.40, -5, "gatech", "sox", "internet2", True),
    Site("ucsd", "San Diego CA", 32.88, -117.24, -8, "ucsd", "cenic", "internet2", False),
    Site("ncar", "Boulder CO", 40.04, -105.25, -7, "ncar", "frgp", "internet2", False),
    Site("umd", "College Park MD", 38.99, -76.94, -5, "umd", "maxgp", "internet2", True),
    Site("cern", "Geneva CH", 46.23, 6.05, 1, "cern", "switch", "geant", False),
    Site("ucl", "London GB", 51.52, -0.13, 0, "ucl", "janet", "geant", True),
    Site("nikhef", "Amsterdam NL", 52.36, 4.95, 1, "nikhef", "surf", "geant", False),
    Site("desy", "Hamburg DE", 53.58, 9.88, 1, "desy", "dfn", "geant", False),
    Site("cnaf", "Bologna IT", 44.50, 11.35, 1, "cnaf", "garr", "geant", True),
)}

# Backbone points of presence: routers on a path are drawn from the ones along the way.
POPS = {
    "internet2": (Place("seat", 47.61, -122.33), Place("sunn", 37.37, -122.04), Place("losa", 34.05, -118.24),
                  Place("salt", 40.76, -111.89), Place("denv", 39.74, -104.99), Place("kans", 39.10, -94.58),
                  Place("hous", 29.76, -95.37), Place("chic", 41.88, -87.63), Place("atla", 33.75, -84.39),
                  Place("wash", 38.91, -77.04), Place("newy", 40.71, -74.01), Place("clev", 41.50, -81.69)),
    "esnet": (Place("sunn", 37.37, -122.04), Place("sacr", 38.58, -121.49), Place("denv", 39.74, -104.99),
              Place("elpa", 31.76, -106.49), Place("kans", 39.10, -94.58), Place("chic", 41.88, -87.63),
              Place("nash", 36.16, -86.78), Place("atla", 33.75, -84.39), Place("wash", 38.91, -77.04),
              Place("newy", 40.71, -74.01), Place("bost", 42.36, -71.06), Place("lond", 51.51, -0.13),
              Place("amst", 52.37, 4.90), Place("cern", 46.23, 6.05)),
    "geant": (Place("lon", 51.51, -0.13), Place("ams", 52.37, 4.90), Place("fra", 50.11, 8.68),
              Place("gen", 46.20, 6.14), Place("mil", 45.46, 9.19), Place("ham", 53.55, 9.99),
              Place("par", 48.86, 2.35)),
    "transit": (Place("chi", 41.88, -87.63), Place("nyc", 40.71, -74.01), Place("dal", 32.78, -96.80),
                Place("sjc", 37.34, -121.89), Place("lon", 51.51, -0.13), Place("fra", 50.11, 8.68),
                Place("ams", 52.37, 4.90), Place("den", 39.74, -104.99), Place("atl", 33.75, -84.39)),
    "he": (Place("chi", 41.88, -87.63), Place("nyc", 40.71, -74.01), Place("fmt", 37.55, -121.99),
           Place("lon", 51.51, -0.13), Place("ams", 52.37, 4.90), Place("fra", 50.11, 8.68),
           Place("sea", 47.61, -122.33), Place("dal", 32.78, -96.80)),
}

_EARTH_RADIUS_KM = 6371.0


def distance_km(a: Place | Site, b: Place | Site) -> float:
    """Great-circle distance between two points."""
    la1, lo1, la2, lo2 = map(math.radians, (a.lat, a.lon, b.lat, b.lon))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * _EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def continent(site: Site) -> str:
    """``eu`` or ``us``: decides the backbones a path crosses."""
    return "eu" if site.backbone == "geant" else "us"
