"""Spanish operating guides for the demo assistant, so the demo corpus is bilingual.

Hand-written, in the voice of an internal wiki: dated front matter, sections, concrete
numbers and commands that a golden question can pin down to one chunk.
"""

from __future__ import annotations

GUIDES_ES: dict[str, str] = {
    "guias/guia-de-despliegue.md": """\
---
title: Guía de despliegue del asistente
date: 2024-03-18
---

# Guía de despliegue del asistente

Esta guía describe cómo se publica una nueva versión del asistente de documentación en el
clúster de producción. El despliegue lo hace siempre la persona de guardia de la plataforma,
nunca el equipo que ha preparado el cambio, para que haya dos pares de ojos sobre cada versión.

## Requisitos previos

Antes de empezar, comprueba que la versión candidata ha superado la evaluación semanal: la
fidelidad (faithfulness) debe ser al menos 0,85 y el recall@5 no puede haber bajado más de dos
puntos respecto a la versión en producción. El informe de la evaluación tiene que estar enlazado
en la petición de cambio.

Necesitas acceso de escritura al espacio de nombres `asistente-prod` y la CLI de Helm 3.14 o
superior. Las credenciales del registro de imágenes se renuevan cada 90 días; si la descarga de
la imagen falla con un error 401, pide una credencial nueva en el canal #plataforma.

## Despliegue gradual (canary)

La versión nueva se publica primero para el 10 % del tráfico durante 30 minutos:

```
helm upgrade asistente charts/asistente --namespace asistente-prod \\
  --set image.tag=$VERSION --set canary.weight=10
```

Durante la ventana de canary vigila el panel «Asistente / Calidad» de Grafana. Si la latencia
p95 supera los 4 segundos o la tasa de respuestas sin citas pasa del 5 %, detén el despliegue.
Si todo va bien, sube el peso al 50 % y, tras otros 30 minutos, al 100 %.

## Reversión

Para volver a la versión anterior basta con `helm rollback asistente --namespace asistente-prod`.
La reversión tarda unos dos minutos y no borra el índice de Qdrant: los fragmentos indexados se
conservan, porque el índice tiene su propio ciclo de vida. Después de revertir, abre una
incidencia con la etiqueta `rollback` y adjunta el identificador de la ejecución de evaluación.
""",
    "guias/preguntas-frecuentes-facturacion.md": """\
---
title: Preguntas frecuentes de facturación
date: 2024-05-06
---

# Preguntas frecuentes de facturación

Respuestas a las dudas que más repiten los equipos que usan el asistente a través de la API
interna. Si tu pregunta no aparece aquí, escribe a finanzas-plataforma@example.com.

## ¿Cómo se calcula el coste de cada consulta?

Cada consulta se factura por tokens: 0,40 € por millón de tokens de entrada y 1,20 € por millón
de tokens de salida. Los fragmentos recuperados de Qdrant cuentan como tokens de entrada, así
que subir el número de fragmentos recuperados (k) de 5 a 10 casi duplica el coste de la entrada.
Las llamadas a herramientas (`sql_query`, `web_search`) se facturan aparte, a 0,002 € por llamada.

## ¿Cuándo se emite la factura?

La factura se emite el primer día hábil de cada mes y cubre el mes natural anterior. El detalle
por equipo se puede descargar en CSV desde el portal de costes durante los 13 meses siguientes;
pasado ese plazo solo queda el total agregado.

## ¿Qué pasa si supero el presupuesto mensual?

Al llegar al 80 % del presupuesto el responsable del equipo recibe un aviso por correo. Al 100 %
las peticiones no se cortan, pero pasan a una cola de baja prioridad con un límite de 5
peticiones por segundo hasta que el responsable amplíe el presupuesto en el portal de costes.

## ¿Las evaluaciones de calidad se facturan?

No. Las ejecuciones de evaluación (la semanal completa y la diaria sobre una muestra de trazas)
se cargan al centro de coste de la plataforma, no al de tu equipo, aunque usen tu modelo.
""",
    "guias/procedimiento-de-guardia.md": """\
---
title: Procedimiento de guardia
date: 2024-06-21
---

# Procedimiento de guardia

La guardia de la plataforma del asistente dura una semana, de lunes a las 10:00 al lunes
siguiente a la misma hora. Quien está de guardia atiende las alertas de calidad además de las
de disponibilidad.

## Alerta de fidelidad baja

La alerta `RagFaithfulnessLow` salta cuando la media de la fidelidad en 30 minutos baja de 0,80
durante más de 10 minutos. Lo primero es mirar la precisión del contexto en el mismo panel:
si también ha bajado, el problema suele estar en la recuperación (un índice a medio reconstruir,
un cambio en el reranker) y no en el modelo. Si la precisión del contexto está estable, revisa
si ha cambiado el prompt o la temperatura en el último despliegue.

## Alerta de evaluación sin datos

Si la métrica `rag_eval_last_success_timestamp_seconds` tiene más de 26 horas, la evaluación
diaria no ha terminado. Revisa en Airflow el DAG de evaluación en línea: los fallos más comunes
son la caída del servidor vLLM del juez y el bloqueo de DVC cuando dos tareas intentan versionar
datos a la vez.

## Traspaso de guardia

El lunes, antes de las 10:00, la persona saliente escribe en el canal #guardia-asistente un
resumen con las alertas de la semana, las incidencias abiertas y cualquier reindexación del
corpus pendiente. Una reindexación a medias es el caso más delicado: los identificadores de
fragmento del conjunto dorado pueden quedar obsoletos.
""",
    "guias/actualizacion-del-corpus.md": """\
---
title: Actualización del corpus documental
date: 2024-09-02
---

# Actualización del corpus documental

El corpus del asistente se reindexa cada vez que el equipo de documentación publica cambios.
Esta página explica qué ocurre en cada reindexación y qué hay que comprobar después.

## Reindexación incremental

Solo se vuelven a procesar los documentos cuyo contenido ha cambiado: cada documento guarda una
huella (hash) de sus fragmentos y, si la huella coincide, sus vectores no se tocan. Los
documentos borrados de la carpeta de origen se eliminan del índice con todos sus fragmentos.
Una reindexación típica de unos pocos documentos termina en menos de un minuto.

## Versión del corpus

Tras cada reindexación se calcula una versión del corpus: un hash de los identificadores y del
contenido de todos los fragmentos. Si la versión cambia, se publica un evento del asset
`ragwatch_corpus` en Airflow para que los DAG que dependen del corpus se enteren. El conjunto
dorado guarda la versión con la que se construyó; si no coincide con la actual, los
identificadores de fragmento de referencia pueden no existir ya.

## Comprobaciones después de reindexar

Lanza la evaluación de recuperación sobre el conjunto de desarrollo y compara el recall@5 con la
ejecución anterior. Una caída de más de 0,05 suele indicar que un documento se ha troceado de
otra forma (por ejemplo, porque alguien cambió los títulos de las secciones) y que hay que
regenerar las preguntas doradas afectadas.
""",
}
"""Relative path -> Markdown text, front matter included."""
