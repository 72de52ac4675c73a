"""Words the redactor reads after a label, telling a value from talk about it."""

from __future__ import annotations

__all__ = ["DESCRIPTIONS", "KEY_KINDS", "NOT_A_VALUE"]

# Words that follow "password:" in schemas, code and prose, and hashing schemes (密码是 SHA256 加密的).
_NOT_VALUES = """
required optional none null nil undefined true false str string int bytes text varchar char secret secretstr password
passwd pwd pass passphrase token yourpassword your_password changeme incorrect correct wrong invalid valid expired weak
strong empty blank missing hidden masked redacted reset changed protected encrypted hashed unknown same different input
getpass bool boolean float dict list any object secretbytes md5 sha1 sha256 sha-256 sha512 bcrypt argon2 scrypt pbkdf2
plaintext hash aes rsa base64
"""
NOT_A_VALUE = frozenset(_NOT_VALUES.split())

# What "my password is ..." says when it describes the password rather than gives it. A word of three
# letters or fewer is never taken as a password in English prose ("the password is new"), nor the short
# words below ("the password is there", "my password is long"), nor participles, adverbs and the like,
# by their endings; "my password is tiger" is a password stated as such.
_DESCRIPTION_WORDS = """
    secure insecure simple complex complicated obvious unique private secret personal default random common
    stronger longer shorter weaker better worse easier harder simpler safer longest shortest strongest weakest
    necessary mandatory temporary ordinary memorable terrible horrible something anything nothing everything
    somewhere anywhere nowhere elsewhere written printed taped hidden stolen forgotten mistyped changed reset
    unknown useless pointless endless public identical similar familiar unclear
    there here where long short weak good easy hard safe fine okay same cool great nice gone lost wrong
    right valid what that this these those mine ours yours theirs also still just very quite super such
    case fixed known shared saved empty blank basic fake dummy test above below later again taken ready
    stale clear plain funny silly crazy dumb lame stupid awful broken locked unsafe solid tough strong
    legit fancy cheap messy weird
"""
DESCRIPTIONS = frozenset(_DESCRIPTION_WORDS.split())

# Algorithms and curves named after 密钥是 (the key's kind, not the key).
_KEY_KIND_WORDS = "ed25519 x25519 curve25519 secp256k1 secp256r1 secp384r1 p256 p384 rsa2048 rsa4096"
KEY_KINDS = frozenset(_KEY_KIND_WORDS.split())
